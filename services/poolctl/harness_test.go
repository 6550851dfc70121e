package poolctl

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/accounts"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
	"better-compute.io/compute/services/reconciler"
)

const tenant = "acme"

type staticResolver struct{}

func (staticResolver) Resolve(context.Context, string) (string, error) { return "test-token", nil }

// harness is a bus with the Hetzner Cloud emulator (fast actions, an
// unlimited budget), its provider, a reconciler, the accounts service,
// one account and one pool ("web", flavor small = cx23 with ubuntu-24.04)
// written into KV, and a tenant client. Controllers are started by the
// test (startController).
type harness struct {
	t    testing.TB
	env  *bustest.Env
	emu  *emulator.Server
	cl   *client.Client
	pool api.Pool
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{t: t, env: bustest.Start(t)}
	emu, err := emulator.Start(emulator.Options{RateLimitSize: 10_000_000, RateLimitRefillPerSecond: 1_000_000,
		ActionDuration: 10 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	h.emu = emu
	svc, err := provider.Serve(h.env.Connect(t), hetzner.Definition(hetzner.WithEndpoint(emu.URL())), provider.ServeOptions{
		Logger: zerolog.Nop(), Resolver: func(string) provider.SecretResolver { return staticResolver{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	rec, err := reconciler.Start(h.env.Connect(t), h.env.Stores, reconciler.Options{
		Logger: zerolog.Nop(), PollInterval: 20 * time.Millisecond, CallTimeout: 2 * time.Second,
		AckWait: 2 * time.Second, ResyncInterval: -1,
		Retry: reconciler.RetryPolicy{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Stop)
	acc, err := accounts.Start(h.env.Connect(t), h.env.Stores, accounts.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = acc.Stop() })
	ctx := context.Background()
	acct := api.Account{ID: api.NewID(api.PrefixAccount), TenantID: tenant, Provider: "hetzner-cloud", Name: "hz", Version: 1,
		Config: map[string]any{"token": "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "location": "fsn1"}}
	if _, err := h.env.Stores.AccountTable().Create(ctx, tenant, acct.ID, acct); err != nil {
		t.Fatal(err)
	}
	h.pool = api.Pool{ID: api.NewID(api.PrefixPool), TenantID: tenant, Name: "web", Class: api.PoolClassProvider,
		ProviderAccountID: acct.ID, Agent: api.PoolAgentNone, Version: 1, CreatedAt: time.Now().UTC(),
		Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}}}
	if _, err := h.env.Stores.PoolTable().Create(ctx, tenant, h.pool.ID, h.pool); err != nil {
		t.Fatal(err)
	}
	h.cl = client.New(h.env.Connect(t), tenant, 10*time.Second)
	return h
}

// fastOptions are controller options for tests: a short lease, quick
// rechecks, no resync (events and rechecks drive the passes).
func fastOptions(id string) Options {
	return Options{Logger: zerolog.Nop(), ID: id, LeaseDuration: 3 * time.Second, CallTimeout: 2 * time.Second,
		RecheckInterval: 100 * time.Millisecond, ResyncInterval: -1}
}

// startController starts a controller on its own connection.
func (h *harness) startController(o Options) *Controller {
	h.t.Helper()
	return h.startControllerOn(h.env.Connect(h.t), o)
}

// startControllerOn starts a controller on nc with stores of its own on
// nc, as a separate process would have: closing nc stops all it does.
func (h *harness) startControllerOn(nc *nats.Conn, o Options) *Controller {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := Start(nc, st, o)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(c.Stop)
	return c
}

// update sends pools.update for the harness pool.
func (h *harness) update(req api.PoolUpdateRequest) api.Pool {
	h.t.Helper()
	req.ID = h.pool.ID
	p, err := h.cl.Pools.Update(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// scale sets the size of flavor small.
func (h *harness) scale(n int) api.Pool {
	h.t.Helper()
	return h.update(api.PoolUpdateRequest{Sizes: map[string]int{"small": n}})
}

// instances reads the pool's instance records straight from KV.
func (h *harness) instances() []api.Instance {
	h.t.Helper()
	page, err := h.env.Stores.InstanceTable().List(context.Background(), tenant, 1000, "", func(i *api.Instance) bool {
		return i.PoolID == h.pool.ID
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return page.Items
}

// control reads the controller's record of the pool.
func (h *harness) control() api.PoolControl {
	h.t.Helper()
	c, _, err := h.env.Stores.PoolControlTable().Get(context.Background(), tenant, h.pool.ID)
	if err != nil && !api.IsCode(err, api.CodeNotFound) {
		h.t.Fatal(err)
	}
	return c
}

// settled reports whether the pool has exactly n instances, all Running on
// revision rev, none being deleted, exactly n machines in the emulator,
// and the controller's status says Complete.
func (h *harness) settled(n int, rev int64) bool {
	insts := h.instances()
	if len(insts) != n {
		return false
	}
	for _, i := range insts {
		if i.Status.Phase != api.PhaseRunning || i.DeletionRequestedAt != nil {
			return false
		}
	}
	if len(h.emu.Emulator().Servers()) != n {
		return false
	}
	st := h.control().Status
	return st.Rollout == api.RolloutComplete && st.TargetRevision == rev && st.Ready == n
}

// waitSettled waits (bounded) until settled(n, rev), failing with the
// pool's status, its instances and the emulator's servers otherwise.
func (h *harness) waitSettled(n int, rev int64, within time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for !h.settled(n, rev) {
		if time.Now().After(deadline) {
			h.t.Fatalf("pool not settled at %d instances of revision %d after %s:\n%s", n, rev, within, h.dump())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dump is what a person needs to see of a pool that did not settle.
func (h *harness) dump() string {
	st, _ := json.MarshalIndent(h.control(), "", "  ")
	phases := map[string]int{}
	for _, i := range h.instances() {
		k := string(i.Status.Phase)
		if i.DeletionRequestedAt != nil {
			k += "(deleting)"
		}
		phases[k]++
	}
	return fmt.Sprintf("control record: %s\ninstances by phase: %v\nemulator servers: %d", st, phases, len(h.emu.Emulator().Servers()))
}

// checkNoOrphans compares the emulator's servers with the instance
// records: every server carries the id of a recorded instance as its
// idempotency key and every instance has exactly one server, the one it
// records; every instance is in a slot of the controller's record and
// every slot names an instance.
func (h *harness) checkNoOrphans() {
	h.t.Helper()
	insts := map[string]api.Instance{}
	for _, i := range h.instances() {
		insts[i.ID] = i
	}
	byKey := map[string][]int64{}
	for _, s := range h.emu.Emulator().Servers() {
		key := s.Labels[hetzner.DefaultLabelPrefix+"/idempotency-key"]
		byKey[key] = append(byKey[key], s.ID)
	}
	for key, ids := range byKey {
		if _, ok := insts[key]; !ok || len(ids) != 1 {
			h.t.Errorf("server(s) %v carry key %q: recorded instance %v, want exactly one server of a recorded instance", ids, key, ok)
		}
	}
	for id, i := range insts {
		if len(byKey[id]) != 1 || i.Status.Machine == nil || i.Status.Machine.ID != fmt.Sprint(byKey[id][0]) {
			h.t.Errorf("instance %s: servers %v, machine %+v", id, byKey[id], i.Status.Machine)
		}
	}
	slots := map[string]bool{}
	ordinals := map[int64]bool{}
	for _, s := range h.control().Slots {
		if ordinals[s.Ordinal] {
			h.t.Errorf("ordinal %d is in two slots", s.Ordinal)
		}
		ordinals[s.Ordinal] = true
		slots[s.InstanceID] = true
		if _, ok := insts[s.InstanceID]; !ok {
			h.t.Errorf("slot %d names instance %q, which is not recorded", s.Ordinal, s.InstanceID)
		}
	}
	for id := range insts {
		if !slots[id] {
			h.t.Errorf("instance %s is in no slot of the controller's record", id)
		}
	}
}

// images counts the emulator's servers per image name.
func (h *harness) images() map[string]int {
	out := map[string]int{}
	for _, s := range h.emu.Emulator().Servers() {
		out[s.Image]++
	}
	return out
}
