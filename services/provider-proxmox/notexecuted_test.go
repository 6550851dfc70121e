package proxmox

import (
	"context"
	"strconv"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// An error says details.notExecuted exactly when the call provably changed
// nothing: PVE refused its changing request (a lock) before acting, not
// when the request started a task that then failed.
func TestErrorsSayWhenNothingWasExecuted(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_n")
	vmid, _ := strconv.Atoi(m.ID)
	ctx := context.Background()

	if err := e.emu.SetVMLock(vmid, "backup"); err != nil {
		t.Fatal(err)
	}
	err := e.client.Power(ctx, e.call("inst_n"), m.ID, api.ActionReset)
	if ce := api.AsComputeError(err); ce == nil || !ce.NotExecuted() {
		t.Fatalf("reset of a locked VM: %v, want an error with notExecuted", err)
	}
	if err := e.emu.SetVMLock(vmid, ""); err != nil {
		t.Fatal(err)
	}
	e.emu.FailNextTask("qmreset", "reset failed: injected")
	err = e.client.Power(ctx, e.call("inst_n"), m.ID, api.ActionReset)
	if ce := api.AsComputeError(err); ce == nil || ce.NotExecuted() {
		t.Fatalf("reset whose task failed: %v, want an error without notExecuted", err)
	}
}
