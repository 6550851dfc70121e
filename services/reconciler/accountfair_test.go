package reconciler

import (
	"context"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider/memory"
)

// One account's flood of work does not hold back the same tenant's work
// on another account: with one worker, acme's 50 creates on one account
// queued (their first pass held) and then one acme create on a second
// account, the second account's first pass runs as soon as the worker is
// free after the first account's turn, not after its backlog.
func TestOneAccountsFloodDoesNotHoldBackTheTenantsOther(t *testing.T) {
	const n = 50
	h, open, passes := gatedPasses(t)
	second := h.writePool(tenant, memory.ProviderID, "mem-2", map[string]any{"token": "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "region": "mem1"},
		api.Flavor{Name: "small", OfferID: "small", Image: "debian-12"})
	running := h.runningEvents(tenant)
	flood := map[string]bool{}
	for _, id := range h.createMany(n, "flood") {
		flood[id] = true
	}
	late := h.create(api.InstanceCreateRequest{PoolID: second.ID})
	h.waitHeld(WorkConsumer(tenant, second.ProviderAccountID))
	open()
	h.waitRunning(running, late.ID, 30*time.Second)

	before := 0
	for _, id := range passes() {
		if id == late.ID {
			break
		}
		if !flood[id] {
			t.Fatalf("pass of unknown instance %s", id)
		}
		before++
	}
	// the held pass of the first account, then the oldest of its messages
	// waiting (its turn came first): two, whatever the flood.
	if before > 2 {
		t.Fatalf("%d of the first account's %d instances had a pass before the second account's first (want at most 2)", before, n)
	}
}

// Work queued under the subject without an account (compute.work.<tenant>.<id>,
// as reconcilers before the per-account consumers queue it, e.g. during a
// rolling upgrade) is still consumed, by the tenant's consumer of that shape.
func TestWorkQueuedWithoutAnAccountIsConsumed(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	inst := h.create(api.InstanceCreateRequest{})
	// the work as an old replica queued it; the new-shaped message goes
	stream, err := h.env.Stores.JS.Stream(context.Background(), bus.StreamWork)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.env.Stores.JS.Publish(context.Background(), bus.Work(tenant, inst.ID), nil); err != nil {
		t.Fatal(err)
	}
	h.startReconciler(h.env.Connect(t))
	h.waitPhase(inst.ID, api.PhaseRunning)
}
