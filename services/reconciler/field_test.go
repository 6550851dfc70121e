package reconciler

import (
	"context"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
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

// After a run of failed creates, the looks at the booting machine follow
// the boot (issue 11, item 7): PollInterval after the create, doubling per
// look, not the delay the failures' passes had grown to.
func TestLooksAfterRetriesFollowTheBoot(t *testing.T) {
	opts := fastOptions()
	opts.Retry = RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond}
	h := newHarness(t, opts)
	h.rec.Stop() // the passes below are the only ones
	h.startAPIOnly()
	h.cloud.BootPolls = 2
	busy := api.ProviderError(412, "resource_unavailable", "no capacity")
	h.cloud.FailNext(provider.VerbCreate, busy, busy, busy, busy, busy)
	inst := h.create(api.InstanceCreateRequest{})

	var looks []time.Duration // the delays decided after each pass that saw the machine
	for range 100 {
		out, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if out.done {
			break
		}
		if cur, err := h.get(inst.ID); err == nil && cur.Status.Machine != nil {
			looks = append(looks, out.requeue)
		}
		time.Sleep(out.requeue) // what JetStream's redelivery would wait
	}
	want := []time.Duration{opts.PollInterval, 2 * opts.PollInterval}
	if len(looks) != len(want) || looks[0] != want[0] || looks[1] != want[1] {
		t.Fatalf("after 5 failed creates the booting machine was looked at again after %v, want %v", looks, want)
	}
	if got := h.cloud.Calls(provider.VerbCreate); got != 6 {
		t.Fatalf("%d creates, want 6", got)
	}
}
