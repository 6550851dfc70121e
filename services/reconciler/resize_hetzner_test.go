package reconciler

import (
	"net/http"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// hetznerResizePool starts a Hetzner emulator (actions of action each)
// and makes a pool on it h's pool: flavors small (cx23) and big (cx33,
// disk kept).
func hetznerResizePool(t *testing.T, h *harness, action time.Duration) *emulator.Server {
	t.Helper()
	emu, err := emulator.Start(emulator.Options{RateLimitSize: 100_000, RateLimitRefillPerSecond: 10_000, ActionDuration: action}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	h.pool = h.addHetznerPool(emu, http.DefaultTransport, hetzner.WithPollInterval(20*time.Millisecond))
	h.addFlavors(api.Flavor{Name: "big", OfferID: "cx33"})
	return emu
}

// serverType is the type the emulator's only server has.
func serverType(t *testing.T, emu *emulator.Server) string {
	t.Helper()
	servers := emu.Emulator().Servers()
	if len(servers) != 1 {
		t.Fatalf("%d servers, want 1", len(servers))
	}
	return servers[0].ServerType
}

// A resize on the Hetzner emulator through the bus: the running server is
// powered off, its type changed (one change_type) and it runs again; the
// instance is on the new flavor with its generation observed. The API
// requests of the whole resize (the reconciler's looks included) are
// counted and printed.
func TestHetznerResizeThroughTheBus(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := hetznerResizePool(t, h, 50*time.Millisecond)
	inst := h.create(api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small"})
	h.waitPhase(inst.ID, api.PhaseRunning)
	emu.Emulator().ResetCalls()

	h.setFlavor(inst.ID, "big")
	h.waitResized(inst.ID)
	got := h.waitPhase(inst.ID, api.PhaseRunning)
	counts := emu.Emulator().CallCounts()
	total := 0
	for _, n := range counts {
		total += n
	}
	t.Logf("calls per resize (reconciler and provider, running server): %d %v", total, counts)
	if got.Status.Resize.State != api.ResizeSucceeded || !got.Status.Resize.Rebooted || got.Status.Flavor != "big" {
		t.Fatalf("resize:\n%s", statusJSON(got))
	}
	if counts[emulator.RouteChangeType] != 1 || counts["POST /servers/{id}/actions/poweroff"] != 1 || serverType(t, emu) != "cx33" {
		t.Fatalf("change_type %d, poweroff %d, type %s", counts[emulator.RouteChangeType],
			counts["POST /servers/{id}/actions/poweroff"], serverType(t, emu))
	}
}

// The reconciler process is SIGKILLed while its resize's change_type runs;
// a new reconciler waits out the claim's lease, re-observes the server
// instead of sending change_type again, and the instance ends on the one
// flavor its machine is on.
func TestResizeSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a process")
	}
	h := newHarness(t, fastOptions(), startAPI)
	emu := hetznerResizePool(t, h, time.Second)
	child := childReconciler(h.env.URL)
	child.Start(t)
	inst := h.create(api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small"})
	h.waitPhase(inst.ID, api.PhaseRunning)

	h.setFlavor(inst.ID, "big")
	deadline := time.Now().Add(30 * time.Second)
	for emu.Emulator().Calls(emulator.RouteChangeType) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no change_type was sent:\n%s", statusJSON(h.record(inst.ID)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	child.Kill() // the change_server_type action still runs
	if rs := h.record(inst.ID).Status.Resize; rs == nil || rs.State != api.ResizeExecuting {
		t.Fatalf("the resize was not claimed before change_type:\n%s", statusJSON(h.record(inst.ID)))
	}
	h.clock.Advance(h.rec.resizeTimeout() + claimMargin + time.Second) // the claim's lease is over
	h.startReconciler(h.env.Connect(t))
	h.rec.requeue(h.record(inst.ID))
	got := h.waitFor(inst.ID, "resize settled, machine seen on the new type", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Resize != nil && i.Status.Resize.State == api.ResizeSucceeded &&
			i.Status.Flavor == "big" && i.Status.ObservedGeneration == i.Generation && i.Status.Phase == api.PhaseRunning
	})
	if n := emu.Emulator().Calls(emulator.RouteChangeType); n != 1 {
		t.Fatalf("change_type sent %d times, want once", n)
	}
	if typ := serverType(t, emu); typ != "cx33" {
		t.Fatalf("server type %s, instance says flavor %s", typ, got.Status.Flavor)
	}
	t.Logf("after the kill: resize %s (%s)", got.Status.Resize.State, got.Status.Resize.Message)
}
