package reconciler

import (
	"context"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// opFinished waits until operation opID of instance id has an outcome in
// state and a look at the machine since found it as declared.
func (h *harness) opFinished(id, opID string, state api.OperationState) *api.Instance {
	h.t.Helper()
	return h.waitFor(id, "operation "+opID+" "+string(state)+" and converged", func(i *api.Instance, err error) bool {
		ready := condition(i, api.ConditionReady)
		return err == nil && i.Status.LastOperation != nil && i.Status.LastOperation.ID == opID && i.Status.LastOperation.State == state &&
			ready != nil && ready.Status == api.ConditionTrue && i.Status.ObservedGeneration == i.Generation
	})
}

// wantOperationFailure fails the test unless inst's ProviderError condition
// records the failure of operation opID with code.
func wantOperationFailure(t *testing.T, inst *api.Instance, opID string, code api.Code) {
	t.Helper()
	c := providerCondition(inst)
	if c == nil || c.Status != api.ConditionTrue || c.Reason != api.ReasonOf(code) || c.RetryAt != nil ||
		!strings.HasPrefix(c.Message, "operation "+opID+" ") {
		t.Fatalf("ProviderError = %+v, want True, reason %s, no retryAt, naming operation %s", c, code, opID)
	}
	if inst.Status.Phase == api.PhaseFailed {
		t.Fatalf("a failed operation failed the instance: phase %s", inst.Status.Phase)
	}
}

// Failures of one-shot operations are conditions too (issue 21, item 3):
// a failed power action and a failed reinstall are recorded as
// ProviderError (reason the code, message naming the operation) besides
// status.lastOperation; the next successful look keeps it, and the next
// operation's start resolves it.
func TestFailedOperationsAreProviderErrorConditions(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{}).ID, api.PhaseRunning)
	boom := api.ProviderError(500, "server_error", "the provider failed the action")

	h.cloud.FailNext(provider.VerbPower, boom)
	var out api.Instance
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, &out); err != nil {
		t.Fatal(err)
	}
	reset := out.Desired.Operation.ID
	failed := h.opFinished(inst.ID, reset, api.OperationFailed)
	wantOperationFailure(t, failed, reset, api.CodeProviderError)
	if failed.Status.Phase != api.PhaseRunning {
		t.Fatalf("phase %s after a failed reset of a running machine, want Running", failed.Status.Phase)
	}
	// A look that succeeds does not resolve it.
	if o, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, inst.ID); err != nil || !o.done {
		t.Fatalf("a pass over the converged instance: %+v, %v", o, err)
	}
	looked, err := h.get(inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantOperationFailure(t, looked, reset, api.CodeProviderError)

	// The reinstall's start resolves the reset's failure; its own failure
	// replaces it, and the image stays the one the machine runs.
	h.cloud.FailNext(provider.VerbReinstall, boom)
	if err := h.call("reinstall", api.InstanceReinstallRequest{ID: inst.ID, Image: "ubuntu-24.04"}, &out); err != nil {
		t.Fatal(err)
	}
	reinstall := out.Desired.Operation.ID
	refused := h.opFinished(inst.ID, reinstall, api.OperationFailed)
	wantOperationFailure(t, refused, reinstall, api.CodeProviderError)
	if refused.Image != inst.Image || refused.Status.Phase != api.PhaseRunning {
		t.Fatalf("after a failed reinstall: image %q (want %q), phase %s (want Running)", refused.Image, inst.Image, refused.Status.Phase)
	}

	// An operation that succeeds resolves it.
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, &out); err != nil {
		t.Fatal(err)
	}
	ok := h.opFinished(inst.ID, out.Desired.Operation.ID, api.OperationSucceeded)
	if c := providerCondition(ok); c == nil || c.Status != api.ConditionFalse || c.Reason != api.ReasonResolved {
		t.Fatalf("ProviderError after a successful operation = %+v, want False, Resolved", c)
	}
}
