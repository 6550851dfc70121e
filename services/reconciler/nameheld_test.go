package reconciler

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// Delete w1 and create a new w1 at once: Hetzner refuses the new create
// with 409 uniqueness_error while the old server still holds the name,
// because its delete action is running, or because its delete is not sent
// yet (here: refused with 423 locked for a while). That refusal is
// transient: the new instance retries until the name is free and ends
// Running, with exactly one server named w1, its own.
func TestNameHeldByAServerBeingDeletedIsWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		// lockedDeletes is how many DELETE /servers/{id} answer 423.
		lockedDeletes int
		// holder is the old server's status the first refusal names.
		holder string
	}{
		{name: "delete action running", holder: "deleting"},
		{name: "delete not sent yet", lockedDeletes: 5, holder: "running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, emu, advancing := newNameHeldHarness(t)
			old := h.create(api.InstanceCreateRequest{Name: "w1"})
			h.waitFor(old.ID, string(api.PhaseRunning), advancing(api.PhaseRunning))
			emu.FailNext("DELETE /servers/{id}", tc.lockedDeletes, http.StatusLocked, "locked", "server is locked")
			if err := h.call("delete", api.IDRequest{ID: old.ID}, nil); err != nil {
				t.Fatal(err)
			}
			fresh := h.create(api.InstanceCreateRequest{Name: "w1"})
			// The emulator's clock stands still until the new instance has
			// been refused once: the old server holds the name for that long.
			refused := providerCondition(h.waitFor(fresh.ID, "refused once", func(i *api.Instance, err error) bool {
				return err == nil && providerCondition(i) != nil
			}))
			if !strings.Contains(refused.Message, "("+tc.holder+")") {
				t.Fatalf("first refusal %q, want one naming the old server %s", refused.Message, tc.holder)
			}
			h.waitFor(fresh.ID, string(api.PhaseRunning), advancing(api.PhaseRunning))
			h.waitGone(old.ID)

			var named []emulator.ServerSnapshot
			for _, s := range emu.Servers() {
				if s.Name == "w1" {
					named = append(named, s)
				}
			}
			if len(named) != 1 || named[0].Labels[hetzner.DefaultLabelPrefix+"/idempotency-key"] != fresh.ID {
				t.Fatalf("servers named w1: %+v; want one, carrying %s", named, fresh.ID)
			}
			t.Logf("first refusal: %s; POST /servers sent: %d", refused.Message, emu.Calls("POST /servers"))
		})
	}
}

// newNameHeldHarness is a harness creating on a Hetzner emulator whose
// actions take 5 s on a fake clock, and a waitFor condition that advances
// that clock at every look and stops the test when the instance fails.
func newNameHeldHarness(t *testing.T) (*harness, *emulator.Emulator, func(phase api.Phase) func(*api.Instance, error) bool) {
	h := newHarness(t, fastOptions())
	fake := clock.NewFake(time.Now())
	srv, err := emulator.Start(emulator.Options{Clock: fake, ActionDuration: 5 * time.Second}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	// Gets unbatched: the first case needs the old server's delete sent
	// before the new create, and a batch window in the delete pass's look
	// lets the create overtake it (the second case is that order).
	h.pool = h.addHetznerPool(srv, http.DefaultTransport, hetzner.WithBatchWindow(0))
	advancing := func(phase api.Phase) func(*api.Instance, error) bool {
		return func(i *api.Instance, err error) bool {
			if err == nil && i.Status.Phase == api.PhaseFailed {
				status, _ := json.Marshal(i.Status)
				t.Fatalf("instance %s failed: %s", i.ID, status)
			}
			fake.Advance(500 * time.Millisecond)
			return err == nil && i.Status.Phase == phase && i.Status.ObservedGeneration == i.Generation
		}
	}
	return h, srv.Emulator(), advancing
}
