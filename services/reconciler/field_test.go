package reconciler

import (
	"testing"

	"better-compute.io/compute/pkg/api"
)

// A delete never creates (issue 11, item 2): an instance whose create
// Hetzner refused (its name was taken) is deleted once the name is free
// again without a single POST /servers.
func TestDeleteOfAFailedInstanceNeverCreates(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner()
	holder := h.create(api.InstanceCreateRequest{Name: "w1"})
	h.waitPhase(holder.ID, api.PhaseRunning)
	refused := h.create(api.InstanceCreateRequest{Name: "w1"})
	h.waitPhase(refused.ID, api.PhaseFailed)

	if err := h.call("delete", api.IDRequest{ID: holder.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(holder.ID) // the name w1 is free again
	emu.Emulator().ResetCalls()
	if err := h.call("delete", api.IDRequest{ID: refused.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(refused.ID)
	if got := emu.Emulator().Calls("POST /servers"); got != 0 {
		t.Fatalf("the delete of an instance that never got a server sent %d POST /servers, want 0", got)
	}
	if n := len(emu.Emulator().Servers()); n != 0 {
		t.Fatalf("emulator holds %d servers after both deletes, want 0", n)
	}
}
