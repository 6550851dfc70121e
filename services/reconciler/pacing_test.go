package reconciler

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// count429 counts rate-limited replies.
type count429 struct{ n atomic.Int32 }

func (c *count429) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.n.Add(1)
	}
	return resp, err
}

// addHetznerPool serves the hetzner-cloud provider against emu and writes an
// account and a pool for it.
func (h *harness) addHetznerPool(emu *emulator.Server, transport http.RoundTripper) api.Pool {
	h.t.Helper()
	def := hetzner.Definition(hetzner.WithEndpoint(emu.URL()), hetzner.WithHTTPClient(&http.Client{Transport: transport}))
	return h.servePool(def, "hz", map[string]any{"token": "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "location": "fsn1"},
		api.Flavor{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"})
}

// servePool serves def and writes an account of it (named name, with
// config) and a pool of flavor on that account.
func (h *harness) servePool(def *provider.Defined, name string, config map[string]any, flavor api.Flavor) api.Pool {
	h.t.Helper()
	svc, err := provider.Serve(h.env.NC, def, provider.ServeOptions{Logger: zerolog.Nop(),
		Resolver: func(string) provider.SecretResolver { return staticResolver{} }})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = svc.Stop() })
	ctx := context.Background()
	acct := api.Account{ID: api.NewID(api.PrefixAccount), TenantID: tenant, Provider: def.ID(), Name: name, Version: 1, Config: config}
	if _, err := h.env.Stores.AccountTable().Create(ctx, tenant, acct.ID, acct); err != nil {
		h.t.Fatal(err)
	}
	pool := api.Pool{ID: api.NewID(api.PrefixPool), TenantID: tenant, Class: api.PoolClassProvider, ProviderAccountID: acct.ID,
		Agent: api.PoolAgentNone, Version: 1, Flavors: []api.Flavor{flavor}}
	if _, err := h.env.Stores.PoolTable().Create(ctx, tenant, pool.ID, pool); err != nil {
		h.t.Fatal(err)
	}
	return pool
}

// A burst of instances on an account whose API budget is small is paced
// from the budget the provider reports: no 429 at all, everything
// converges, and an account on another provider is not held back.
func TestBurstOnOneAccountIsPacedWithoutRateLimitErrors(t *testing.T) {
	const n = 60
	h := newHarness(t, fastOptions())
	emu, err := emulator.Start(emulator.Options{RateLimitSize: 40, RateLimitRefillPerSecond: 20, ActionDuration: 50 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	limited := &count429{}
	hzPool := h.addHetznerPool(emu, limited)

	memPool := h.pool
	h.pool = hzPool
	paced := h.createMany(n, "paced")
	h.pool = memPool
	other := h.createMany(10, "other")

	h.waitAllRunning(other, time.Minute)
	pacedDone := 0
	for _, id := range paced {
		if inst, err := h.get(id); err == nil && inst.Status.Phase == api.PhaseRunning {
			pacedDone++
		}
	}
	h.waitPhases(paced, api.PhaseRunning, 2*time.Minute)
	if got := limited.n.Load(); got != 0 {
		t.Fatalf("%d replies were 429 rate_limit_exceeded", got)
	}
	if pacedDone == n {
		t.Fatalf("the paced account finished before the other account: pacing did not hold it back")
	}
	if servers := len(emu.Emulator().Servers()); servers != n {
		t.Fatalf("emulator holds %d servers for %d instances", servers, n)
	}
	t.Logf("other account converged while %d/%d paced instances ran; %d Hetzner API calls, 0 rate-limited",
		pacedDone, n, sumCalls(emu.Emulator().CallCounts()))
}

func sumCalls(counts map[string]int) int {
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// waitPhases waits until every id is in phase as declared (any provider).
func (h *harness) waitPhases(ids []string, phase api.Phase, within time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for _, id := range ids {
		for {
			inst, err := h.get(id)
			if err == nil && inst.Status.Phase == phase && inst.Status.ObservedGeneration == inst.Generation {
				break
			}
			if time.Now().After(deadline) {
				h.t.Fatalf("%s never reached %s: %+v (err %v)", id, phase, inst.Status, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// useHetzner starts a Hetzner emulator with fast actions and makes the
// harness create in a pool on it.
func (h *harness) useHetzner() *emulator.Server {
	h.t.Helper()
	emu, err := emulator.Start(emulator.Options{ActionDuration: 10 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = emu.Close() })
	h.pool = h.addHetznerPool(emu, http.DefaultTransport)
	return emu
}

// On Hetzner a resync of settled instances costs one GET /servers per 50
// servers (the API's largest page) instead of one GET /servers/{id} each.
func TestResyncOnHetznerCostsListPages(t *testing.T) {
	const n = 120
	h := newHarness(t, fastOptions())
	emu := h.useHetzner()
	ids := h.createMany(n, "resync")
	h.waitPhases(ids, api.PhaseRunning, 2*time.Minute)

	before := emu.Emulator().CallCounts()
	queued, err := h.rec.Resync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := emu.Emulator().CallCounts()
	lists, gets := after["GET /servers"]-before["GET /servers"], after["GET /servers/{id}"]-before["GET /servers/{id}"]
	if queued != 0 || gets != 0 || lists != (n+49)/50 {
		t.Fatalf("resync of %d settled instances: %d queued, %d GET /servers/{id}, %d GET /servers; want 0, 0, %d",
			n, queued, gets, lists, (n+49)/50)
	}
	t.Logf("resync of %d settled instances: %d API requests (a get each would be %d)", n, sumCalls(after)-sumCalls(before), n)
}

// Requests Hetzner refuses for good fail the instance after one create
// instead of being retried: a name another instance's server holds (409
// uniqueness_error) and an unknown image (422 invalid_input).
func TestHetznerRefusalsFailTheInstance(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner()
	first := h.create(api.InstanceCreateRequest{Name: "web-1"})
	h.waitPhase(first.ID, api.PhaseRunning)
	posts := emu.Emulator().Calls("POST /servers")

	for _, req := range []api.InstanceCreateRequest{{Name: "web-1", PoolID: h.otherPool()}, {Name: "web-2", Image: "no-such-image"}} {
		inst := h.create(req)
		failed := h.waitPhase(inst.ID, api.PhaseFailed)
		c := providerCondition(failed)
		if c == nil || c.Reason != api.ReasonOf(api.CodeProviderError) || c.RetryAt != nil {
			t.Fatalf("%+v: condition %+v, want PROVIDER_ERROR without a retry", req, c)
		}
	}
	time.Sleep(200 * time.Millisecond) // many retry periods of fastOptions
	if got := emu.Emulator().Calls("POST /servers") - posts; got != 2 {
		t.Fatalf("%d POST /servers for the two refused instances, want 2 (one each, no retries)", got)
	}
	if n := len(emu.Emulator().Servers()); n != 1 {
		t.Fatalf("emulator holds %d servers, want 1", n)
	}
}

// After a 429 with RateLimit-Remaining 0 and a reset ahead, nothing more
// goes to that account until the reset: not the rest of a resync (no get
// per instance instead of the list), not new creates. Then they proceed.
// Every request sent inside the closed window would be refused, so the
// emulator's count of refused requests is the count of requests sent too
// early: exactly the one that found the window closed.
func TestClosedRateLimitWindowHoldsEveryCallUntilReset(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner()
	e := emu.Emulator()
	settledIDs := h.createMany(3, "settled")
	h.waitPhases(settledIDs, api.PhaseRunning, time.Minute)

	e.ResetCalls()
	e.SetRateLimit(0, time.Now().Add(3*time.Second))
	queued, err := h.rec.Resync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fresh := h.createMany(2, "fresh")
	h.waitPhases(fresh, api.PhaseRunning, time.Minute)
	if got := e.RateLimitedCalls(); got != 1 {
		t.Fatalf("%d requests were sent inside the closed window (refused with 429), want 1; resync queued %d; calls %v",
			got, queued, e.CallCounts())
	}
	before := e.CallCounts()
	if queued, err = h.rec.Resync(context.Background()); err != nil || queued != 0 {
		t.Fatalf("resync after the reset: %d queued, %v; want 0 queued", queued, err)
	}
	after := e.CallCounts()
	if lists := after["GET /servers"] - before["GET /servers"]; lists != 1 {
		t.Fatalf("resync after the reset sent %d GET /servers, want 1", lists)
	}
	t.Logf("calls with the window closed and after: %v", after)
}
