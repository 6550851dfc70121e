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

// opEnded waits until operation opID of instance id left Executing.
func (h *harness) opEnded(id, opID string) *api.OperationStatus {
	h.t.Helper()
	return h.waitFor(id, "operation "+opID+" ended", func(i *api.Instance, err error) bool {
		last := i.Status.LastOperation
		return err == nil && last != nil && last.ID == opID && last.State != api.OperationExecuting
	}).Status.LastOperation
}

// A one-shot operation the API refused before acting (issue 11, item 5:
// Hetzner's 423 locked while another action runs) is sent again under the
// same operation until it runs, and runs once; one whose reply was lost
// may have run: Unknown, never sent again.
func TestRefusedOperationIsRetriedAndALostOneIsNot(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner().Emulator()
	inst := h.create(api.InstanceCreateRequest{Name: "op"})
	h.waitPhase(inst.ID, api.PhaseRunning)

	const rebuild, reset = "POST /servers/{id}/actions/rebuild", "POST /servers/{id}/actions/reset"
	emu.FailNext(rebuild, 2, 423, "locked", "another action is running")
	var out api.Instance
	if err := h.call("reinstall", api.InstanceReinstallRequest{ID: inst.ID, Image: "debian-12"}, &out); err != nil {
		t.Fatal(err)
	}
	if last := h.opEnded(inst.ID, out.Desired.Operation.ID); last.State != api.OperationSucceeded {
		t.Fatalf("reinstall refused twice with 423 locked ended %+v, want Succeeded after the lock cleared", last)
	}
	if got := emu.Calls(rebuild); got != 3 {
		t.Fatalf("%d rebuild requests, want 3 (two refused, one run)", got)
	}

	emu.DropResponseNext(reset, 1)
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, &out); err != nil {
		t.Fatal(err)
	}
	if last := h.opEnded(inst.ID, out.Desired.Operation.ID); last.State != api.OperationUnknown {
		t.Fatalf("a reset whose reply was lost ended %+v, want Unknown", last)
	}
	h.waitPhase(inst.ID, api.PhaseRunning)
	if got := emu.Calls(reset); got != 1 {
		t.Fatalf("%d reset requests, want 1: a reset that may have run is never sent again", got)
	}
}
