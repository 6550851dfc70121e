package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider/memory"
)

// otherTenant is a second tenant beside the harness's own (tenant).
const otherTenant = "globex"

// createAs creates one instance of tenantID in pool (flavor small).
func (h *harness) createAs(tenantID string, pool api.Pool) *api.Instance {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var inst api.Instance
	req := api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small"}
	if err := bus.Call(ctx, h.env.NC, bus.Command(tenantID, bus.ResourceInstances, "create"), req, &inst); err != nil {
		h.t.Fatalf("create as %s: %v", tenantID, err)
	}
	return &inst
}

// runningEvents delivers the id of every instance of tenantID whose
// running event is published, from now until the test ends.
func (h *harness) runningEvents(tenantID string) <-chan string {
	h.t.Helper()
	running := make(chan string, 1024)
	sub, err := h.env.NC.Subscribe(bus.Event(tenantID, bus.ResourceInstances, "*", "running"), func(m *nats.Msg) {
		var ev api.Event
		if json.Unmarshal(m.Data, &ev) == nil {
			select {
			case running <- ev.ResourceID:
			default: // the test reads only the ones it waits for
			}
		}
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return running
}

// waitRunning waits for id's running event on running (at most within).
func (h *harness) waitRunning(running <-chan string, id string, within time.Duration) {
	h.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case got := <-running:
			if got == id {
				return
			}
		case <-deadline:
			h.t.Fatalf("instance %s not running within %v", id, within)
		}
	}
}

// One tenant's flood of work does not hold back another tenant's: with one
// worker, acme's 50 creates queued (their first pass held) and then one
// globex create, globex's first pass runs as soon as the worker is free
// after acme's turn, not after acme's backlog. (First come, first served,
// it ran after all 50.)
func TestOneTenantsFloodDoesNotHoldBackAnother(t *testing.T) {
	const n = 50
	h, open, passes := gatedPasses(t)
	other := h.writePool(otherTenant, memory.ProviderID, "mem", map[string]any{"token": "secret://globex/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "region": "mem1"},
		api.Flavor{Name: "small", OfferID: "small", Image: "debian-12"})
	running := h.runningEvents(otherTenant)
	flood := map[string]bool{}
	for _, id := range h.createMany(n, "flood") {
		flood[id] = true
	}
	late := h.createAs(otherTenant, other)
	h.waitHeld(WorkConsumer(otherTenant, other.ProviderAccountID))
	open()
	h.waitRunning(running, late.ID, 30*time.Second)

	before := map[string]bool{}
	for _, id := range passes() {
		if id == late.ID {
			break
		}
		if !flood[id] {
			t.Fatalf("pass of unknown instance %s", id)
		}
		before[id] = true
	}
	// acme's held pass, then the oldest of acme's messages waiting in the
	// fair queue (acme's turn came first): two, whatever the flood.
	if len(before) > 2 {
		t.Fatalf("%d of acme's %d instances had a pass before globex's first (want at most 2)", len(before), n)
	}
}

// waitHeld waits until a replica holds a message of the work consumer
// (delivered, not acknowledged).
func (h *harness) waitHeld(consumer string) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		held, err := h.held(consumer)
		if held {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no message of %s held after 30 s (last error %v)", consumer, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// held reports whether a message of the work consumer is delivered and not
// acknowledged.
func (h *harness) held(consumer string) (bool, error) {
	cons, err := h.env.Stores.JS.Consumer(context.Background(), bus.StreamWork, consumer)
	if err != nil {
		return false, err
	}
	info, err := cons.Info(context.Background())
	if err != nil {
		return false, err
	}
	return info.NumAckPending > 0, nil
}

// Work queued before the upgrade to per-tenant consumers is kept: a store
// whose stream holds work, one message of it delivered to the legacy shared
// consumer and never acknowledged (a replica of the old version killed
// mid-pass), is consumed to the end by a reconciler of this version.
func TestWorkQueuedBeforeTheUpgradeIsKept(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	ctx := context.Background()
	legacy, err := h.env.Stores.JS.CreateOrUpdateConsumer(ctx, bus.StreamWork, jetstream.ConsumerConfig{
		Durable: legacyConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	held := h.create(api.InstanceCreateRequest{})
	queued := h.create(api.InstanceCreateRequest{})
	msg, err := legacy.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, id, _ := parseWorkSubject(msg.Subject()); id != held.ID {
		t.Fatalf("legacy consumer delivered %s first, want %s", msg.Subject(), held.ID)
	}
	h.startReconciler(h.env.Connect(t))
	h.waitPhase(held.ID, api.PhaseRunning)
	h.waitPhase(queued.ID, api.PhaseRunning)
	if _, err := h.env.Stores.JS.Consumer(ctx, bus.StreamWork, legacyConsumer); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("legacy consumer after start-up: %v, want it deleted", err)
	}
}

// gatedPasses starts a harness with one worker whose passes wait until
// open is called (once; the test's cleanup opens it too) and returns the
// instance ids of the passes in the order they started.
func gatedPasses(t *testing.T) (h *harness, open func(), passes func() []string) {
	var (
		mu    sync.Mutex
		order []string
		once  sync.Once
	)
	gate := make(chan struct{})
	opts := fastOptions()
	opts.ReconcileWorkers = 1
	opts.Hooks.BeforePass = func(id string) {
		<-gate
		mu.Lock()
		order = append(order, id)
		mu.Unlock()
	}
	h = newHarness(t, opts)
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	return h, open, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(order)
	}
}
