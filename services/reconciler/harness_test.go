package reconciler

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/memory"
)

const tenant = "acme"

// staticResolver resolves every reference to one test value.
type staticResolver struct{}

func (staticResolver) Resolve(context.Context, string) (string, error) { return "test-token", nil }

// harness is a bus with the memory provider, one account and pool written
// straight into KV, and a reconciler. Its reconcilers run on clock (unless
// the test's options name another): a test moves it past a lease, a
// backoff or a timeout instead of sleeping.
type harness struct {
	t     testing.TB
	env   *bustest.Env
	cloud *memory.Cloud
	clock *clock.Shifted
	pool  api.Pool
	opts  Options
	rec   *Reconciler
	// api is the service of startAPIOnly (nil without it).
	api *bus.Service
}

func fastOptions() Options {
	return Options{
		Logger: zerolog.Nop(), PollInterval: 20 * time.Millisecond, CallTimeout: 5 * time.Second,
		AckWait: 2 * time.Second, ResyncInterval: -1,
		Retry: RetryPolicy{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond},
	}
}

// start is what newHarness starts besides the bus, the memory provider,
// its account and pool.
type start int

// startAPI serves the instance API alone: no pass runs but the ones the
// test runs itself (h.rec.reconcile). Without it newHarness starts a
// reconciler: instance API, work and resync as configured.
const startAPI start = 1

func newHarness(t testing.TB, opts Options, what ...start) *harness {
	t.Helper()
	h := &harness{t: t, env: bustest.Start(t), cloud: memory.NewCloud(), clock: &clock.Shifted{}, opts: opts}
	if h.opts.Clock == nil {
		h.opts.Clock = h.clock
	}
	svc, err := provider.Serve(h.env.NC, memory.Definition(h.cloud), provider.ServeOptions{
		Logger: zerolog.Nop(), Resolver: func(string) provider.SecretResolver { return staticResolver{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	ctx := context.Background()
	acct := api.Account{ID: api.NewID(api.PrefixAccount), TenantID: tenant, Provider: memory.ProviderID, Name: "mem",
		Config: map[string]any{"token": "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "region": "mem1"}, Version: 1}
	if _, err := h.env.Stores.AccountTable().Create(ctx, tenant, acct.ID, acct); err != nil {
		t.Fatal(err)
	}
	h.pool = api.Pool{ID: api.NewID(api.PrefixPool), TenantID: tenant, Class: api.PoolClassProvider,
		ProviderAccountID: acct.ID, Agent: api.PoolAgentNone, Version: 1,
		Flavors: []api.Flavor{{Name: "small", OfferID: "small", Image: "debian-12"}, {Name: "bogus", OfferID: "no-such-offer", Image: "x"}}}
	if _, err := h.env.Stores.PoolTable().Create(ctx, tenant, h.pool.ID, h.pool); err != nil {
		t.Fatal(err)
	}
	if len(what) > 0 && what[0] == startAPI {
		h.startAPIOnly()
		return h
	}
	h.rec = h.startReconciler(h.env.Connect(t))
	return h
}

// newHarnessHoldingLiveRetries is newHarness whose reconciler holds, in
// Hooks.BeforePass, every pass that starts while the instance has failed
// (Retries > 0) and its deletion is not requested, until the test ends:
// such a pass would retry the live path (a keyed create). A test of what
// the deletion alone does uses it; the deletion's own passes run, and a
// failure of theirs (e.g. Hetzner's 423 locked while a lost create's
// server still starts) is retried as opts.Retry says.
func newHarnessHoldingLiveRetries(t testing.TB, opts Options) *harness {
	t.Helper()
	var (
		mu sync.Mutex // guards h: the hook runs on the reconciler's goroutines
		h  *harness
	)
	release := make(chan struct{})
	opts.Hooks.BeforePass = func(id string) {
		mu.Lock()
		instances := h.env.Stores.InstanceTable()
		mu.Unlock()
		inst, _, err := instances.Get(context.Background(), tenant, id)
		if err == nil && inst.DeletionRequestedAt == nil && inst.Status.Retries > 0 {
			<-release
		}
	}
	started := newHarness(t, opts)
	mu.Lock()
	h = started
	mu.Unlock()
	t.Cleanup(func() { close(release) }) // before the reconciler stops (cleanups run last first)
	return started
}

// startReconciler starts a reconciler with its own connection and stores,
// as a separate process would have.
func (h *harness) startReconciler(nc *nats.Conn) *Reconciler {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	rec, err := Start(nc, st, h.opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(rec.Stop)
	return rec
}

// otherPool writes a second pool on the harness pool's account, with the
// same flavors: instance names are unique per pool, so a test of a name
// the provider refuses (its machines share one project) makes the second
// instance there.
func (h *harness) otherPool() string {
	h.t.Helper()
	p := h.pool
	p.ID = api.NewID(api.PrefixPool)
	if _, err := h.env.Stores.PoolTable().Create(context.Background(), tenant, p.ID, p); err != nil {
		h.t.Fatal(err)
	}
	return p.ID
}

// call sends a command of the test tenant and decodes the reply.
func (h *harness) call(verb string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bus.Call(ctx, h.env.NC, bus.Command(tenant, bus.ResourceInstances, verb), in, out)
}

func (h *harness) create(req api.InstanceCreateRequest) *api.Instance {
	h.t.Helper()
	if req.PoolID == "" {
		req.PoolID = h.pool.ID
	}
	if req.Flavor == "" {
		req.Flavor = "small"
	}
	var inst api.Instance
	if err := h.call("create", req, &inst); err != nil {
		h.t.Fatalf("create: %v", err)
	}
	return &inst
}

// record reads the instance's record straight from KV.
func (h *harness) record(id string) *api.Instance {
	h.t.Helper()
	inst, _, err := h.env.Stores.InstanceTable().Get(context.Background(), tenant, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return &inst
}

func (h *harness) get(id string) (*api.Instance, error) {
	var inst api.Instance
	err := h.call("get", api.IDRequest{ID: id}, &inst)
	return &inst, err
}

// waitFor polls the instance until cond holds (30 s at most).
func (h *harness) waitFor(id, what string, cond func(*api.Instance, error) bool) *api.Instance {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		inst, err := h.get(id)
		if cond(inst, err) {
			return inst
		}
		if time.Now().After(deadline) {
			status, _ := json.MarshalIndent(inst.Status, "", "  ")
			h.t.Fatalf("instance %s never became %s (err %v); last status:\n%s", id, what, err, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) waitPhase(id string, phase api.Phase) *api.Instance {
	h.t.Helper()
	return h.waitFor(id, string(phase), func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Phase == phase && i.Status.ObservedGeneration == i.Generation
	})
}

func (h *harness) waitGone(id string) {
	h.t.Helper()
	h.waitFor(id, "deleted", func(_ *api.Instance, err error) bool { return api.IsCode(err, api.CodeNotFound) })
}

// startAPIOnly serves the instance API alone (no work is consumed) with a
// reconciler that runs only the passes the test calls (h.rec).
func (h *harness) startAPIOnly() {
	h.t.Helper()
	h.rec = newReconciler(h.env.NC, h.env.Stores, h.opts)
	index, err := instanceIndex(h.rec.instances, h.rec.o)
	if err != nil {
		h.t.Fatal(err)
	}
	h.rec.index = index
	h.t.Cleanup(index.Stop)
	svc, err := bus.StartService(h.env.NC, bus.ServiceConfig{Name: "instances-api", Version: "0.0.1", Endpoints: h.rec.endpoints(), Logger: zerolog.Nop()})
	if err != nil {
		h.t.Fatal(err)
	}
	h.api = svc
	h.t.Cleanup(func() { _ = svc.Stop() })
}
