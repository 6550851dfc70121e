package reconciler

import (
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

func TestMachinePhaseTable(t *testing.T) {
	cases := []struct {
		current api.Phase
		state   api.MachineState
		want    api.Phase
	}{
		{api.PhaseProvisioning, api.StatePending, api.PhaseProvisioning},
		{api.PhaseProvisioning, api.StateRunning, api.PhaseRunning},
		{api.PhaseRunning, api.StateStopped, api.PhaseStopped},
		{api.PhaseRunning, api.StateUnknown, api.PhaseRunning},
		{api.PhaseRunning, api.StateError, api.PhaseFailed},
		{api.PhaseRunning, api.StateDeleting, api.PhaseProvisioning}, // nobody asked: it is re-created
		{api.PhaseRunning, api.StateRescue, api.PhaseRunning},
		{api.PhaseReinstalling, api.StateUnknown, api.PhaseProvisioning}, // the reinstall is over (derivePhase)
	}
	for _, c := range cases {
		if got := machinePhase(c.current, c.state); got != c.want {
			t.Errorf("machinePhase(%s, %s) = %s, want %s", c.current, c.state, got, c.want)
		}
	}
	for _, s := range api.MachineStates() {
		if _, ok := phaseTable[s]; !ok {
			t.Errorf("machine state %q has no row in the phase table", s)
		}
	}
}

// TestDerivePhase covers every phase and the composite states: each row
// is a set of facts and the one phase they derive.
func TestDerivePhase(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	retryAt := now.Add(time.Minute)
	machine := func(state api.MachineState) *api.ExternalMachine {
		return &api.ExternalMachine{ID: "4711", State: state}
	}
	terminal := api.Condition{Type: api.ConditionProviderError, Status: api.ConditionTrue, Reason: api.ReasonOf(api.CodeInvalidConfig), Message: "bad token"}
	retrying := terminal
	retrying.Reason, retrying.RetryAt = api.ReasonOf(api.CodeUnavailable), &retryAt
	resolved := api.Condition{Type: api.ConditionProviderError, Status: api.ConditionFalse, Reason: api.ReasonResolved}
	missing := api.Condition{Type: api.ConditionDrift, Status: api.ConditionTrue, Reason: api.ReasonMachineMissing}
	failedReset := &api.OperationStatus{ID: "op_1", Action: api.ActionReset, State: api.OperationFailed, Message: "PROVIDER_ERROR: locked"}
	opFailure := api.Condition{Type: api.ConditionProviderError, Status: api.ConditionTrue, Reason: api.ReasonOf(api.CodeProviderError),
		Message: operationFailureMessage(failedReset)}
	reinstall := func(state api.OperationState) *api.OperationStatus {
		return &api.OperationStatus{ID: "op_2", Action: api.ActionReinstall, State: state, StartedAt: now}
	}

	cases := []struct {
		name     string
		deleting bool
		gen      int64 // the instance's generation (the status observed 3)
		status   api.InstanceStatus
		want     api.Phase
	}{
		{name: "new", status: api.InstanceStatus{}, want: api.PhasePending},
		{name: "create requested", status: api.InstanceStatus{CreateRequested: true}, want: api.PhaseProvisioning},
		{name: "create retrying", status: api.InstanceStatus{CreateRequested: true, Conditions: []api.Condition{retrying}}, want: api.PhaseProvisioning},
		{name: "machine booting", status: api.InstanceStatus{Machine: machine(api.StatePending)}, want: api.PhaseProvisioning},
		{name: "machine running", status: api.InstanceStatus{Machine: machine(api.StateRunning)}, want: api.PhaseRunning},
		{name: "machine in rescue", status: api.InstanceStatus{Machine: machine(api.StateRescue)}, want: api.PhaseRunning},
		{name: "machine stopped", status: api.InstanceStatus{Machine: machine(api.StateStopped)}, want: api.PhaseStopped},
		{name: "machine broken", status: api.InstanceStatus{Machine: machine(api.StateError)}, want: api.PhaseFailed},
		{name: "machine state unknown keeps the phase", status: api.InstanceStatus{Phase: api.PhaseStopped, Machine: machine(api.StateUnknown)},
			want: api.PhaseStopped},
		{name: "machine missing out of band", status: api.InstanceStatus{Conditions: []api.Condition{missing}}, want: api.PhaseProvisioning},
		{name: "machine going out of band", status: api.InstanceStatus{Machine: machine(api.StateDeleting), Conditions: []api.Condition{missing}},
			want: api.PhaseProvisioning},
		{name: "retrying with a machine", status: api.InstanceStatus{Machine: machine(api.StateRunning), Conditions: []api.Condition{retrying}},
			want: api.PhaseRunning},
		{name: "resolved failure", status: api.InstanceStatus{Machine: machine(api.StateRunning), Conditions: []api.Condition{resolved}},
			want: api.PhaseRunning},
		{name: "terminal failure of this generation", gen: 3, status: api.InstanceStatus{CreateRequested: true, Conditions: []api.Condition{terminal}},
			want: api.PhaseFailed},
		{name: "terminal failure with a machine", gen: 3, status: api.InstanceStatus{Machine: machine(api.StateRunning), Conditions: []api.Condition{terminal}},
			want: api.PhaseFailed},
		{name: "terminal failure of an older generation", gen: 4, status: api.InstanceStatus{CreateRequested: true, Conditions: []api.Condition{terminal}},
			want: api.PhaseProvisioning},
		{name: "failed operation does not fail the instance", gen: 3,
			status: api.InstanceStatus{Machine: machine(api.StateRunning), LastOperation: failedReset, Conditions: []api.Condition{opFailure}},
			want:   api.PhaseRunning},
		{name: "deleting", deleting: true, status: api.InstanceStatus{Machine: machine(api.StateRunning)}, want: api.PhaseDeleting},
		{name: "deleting, machine going", deleting: true, status: api.InstanceStatus{Machine: machine(api.StateDeleting)}, want: api.PhaseDeleting},
		{name: "deleting, retrying", deleting: true, gen: 3, status: api.InstanceStatus{Conditions: []api.Condition{retrying}}, want: api.PhaseDeleting},
		{name: "failed while deleting", deleting: true, gen: 3, status: api.InstanceStatus{Machine: machine(api.StateRunning), Conditions: []api.Condition{terminal}},
			want: api.PhaseFailed},
		{name: "deleting after a terminal failure of an older generation", deleting: true, gen: 4,
			status: api.InstanceStatus{Conditions: []api.Condition{terminal}}, want: api.PhaseDeleting},
		{name: "reinstall executing", status: api.InstanceStatus{Phase: api.PhaseRunning, Machine: machine(api.StateRunning), LastOperation: reinstall(api.OperationExecuting)},
			want: api.PhaseReinstalling},
		{name: "reinstall succeeded, not looked at yet",
			status: api.InstanceStatus{Phase: api.PhaseReinstalling, Machine: machine(api.StateUnknown), LastOperation: reinstall(api.OperationSucceeded)},
			want:   api.PhaseReinstalling},
		{name: "reinstall succeeded, booting",
			status: api.InstanceStatus{Phase: api.PhaseReinstalling, Machine: machine(api.StatePending), LastOperation: reinstall(api.OperationSucceeded)},
			want:   api.PhaseReinstalling},
		{name: "reinstall succeeded, running",
			status: api.InstanceStatus{Phase: api.PhaseReinstalling, Machine: machine(api.StateRunning), LastOperation: reinstall(api.OperationSucceeded)},
			want:   api.PhaseRunning},
		{name: "reinstall long done, machine rebooting",
			status: api.InstanceStatus{Phase: api.PhaseRunning, Machine: machine(api.StatePending), LastOperation: reinstall(api.OperationSucceeded)},
			want:   api.PhaseProvisioning},
		{name: "reinstall failed",
			status: api.InstanceStatus{Phase: api.PhaseReinstalling, Machine: machine(api.StateUnknown), LastOperation: reinstall(api.OperationFailed)},
			want:   api.PhaseProvisioning},
		{name: "reinstall while deleting", deleting: true,
			status: api.InstanceStatus{Machine: machine(api.StateRunning), LastOperation: reinstall(api.OperationExecuting)}, want: api.PhaseDeleting},
	}
	seen := map[api.Phase]bool{}
	for _, c := range cases {
		inst := api.Instance{Generation: max(c.gen, 3), Status: c.status}
		inst.Status.ObservedGeneration = 3
		if c.deleting {
			inst.DeletionRequestedAt = &now
		}
		got := derivePhase(&inst)
		if got != c.want {
			t.Errorf("%s: derivePhase = %s, want %s", c.name, got, c.want)
		}
		if failedWhileDeleting(&inst) != (c.deleting && c.want == api.PhaseFailed) {
			t.Errorf("%s: failedWhileDeleting = %v", c.name, failedWhileDeleting(&inst))
		}
		seen[got] = true
	}
	for _, p := range api.Phases() {
		if !seen[p] {
			t.Errorf("no case derives phase %s", p)
		}
	}
}
