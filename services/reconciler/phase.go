package reconciler

import (
	"time"

	"better-compute.io/compute/pkg/api"
)

// sealRecord is the last change of every write of an instance record
// (the API's create and mutate, the reconciler's writeRecord): it counts
// the version, stamps UpdatedAt and sets the phase derived from the
// record (derivePhase). It is the one place a phase is written.
func sealRecord(inst *api.Instance, now time.Time) {
	inst.Version++
	inst.UpdatedAt = now
	inst.Status.Phase = derivePhase(inst)
}

// derivePhase is the instance's phase, derived from its facts; it is the
// only writer of status.phase (every reconciler write, every API write)
// and nothing decides on the phase: decisions read the facts below. In
// order:
//   - Failed while deleting (failedWhileDeleting): the deletion failed
//     terminally;
//   - Deleting: deletion requested;
//   - Failed: a terminal failure of this generation (failedThisGeneration);
//   - Reinstalling: a reinstall runs, or succeeded and its machine was not
//     seen out of pending since (reinstalling);
//   - Failed: a bootstrap that gave up (bootstrapFailed);
//   - Provisioning: a machine recorded whose bootstrap is not Ready
//     (bootstrapPending);
//   - with a machine recorded: the machine state's phase (machinePhase);
//   - Provisioning: a create was requested, or the machine was found
//     deleted out of band and is re-created;
//   - Pending: nothing was sent yet.
//
// The recorded phase is itself a fact only where the machine's state
// says nothing new (machinePhase's unknown) and for a reinstall's
// Reinstalling, which lasts until a look sees the machine out of pending.
func derivePhase(inst *api.Instance) api.Phase {
	s := &inst.Status
	switch {
	case failedWhileDeleting(inst):
		return api.PhaseFailed
	case inst.DeletionRequestedAt != nil:
		return api.PhaseDeleting
	case failedThisGeneration(inst):
		return api.PhaseFailed
	case reinstalling(s):
		return api.PhaseReinstalling
	case bootstrapFailed(inst):
		return api.PhaseFailed
	case s.Machine != nil && bootstrapPending(inst):
		return api.PhaseProvisioning
	case s.Machine != nil:
		return configurePhase(inst, machinePhase(s.Phase, s.Machine.State))
	case s.CreateRequested || machineMissing(inst):
		return api.PhaseProvisioning
	}
	return api.PhasePending
}

// phaseTable maps a machine state to the instance phase ("" keeps the
// current phase: the machine is in a state that says nothing new).
var phaseTable = map[api.MachineState]api.Phase{
	api.StatePending: api.PhaseProvisioning,
	api.StateRunning: api.PhaseRunning,
	api.StateStopped: api.PhaseStopped,
	api.StateRescue:  api.PhaseRunning,
	// A machine going away that nobody asked to delete is re-created
	// (machineGoing); a deletion's phase is Deleting whatever the state.
	api.StateDeleting: api.PhaseProvisioning,
	api.StateDeleted:  api.PhaseProvisioning,
	api.StateError:    api.PhaseFailed,
	api.StateUnknown:  "",
}

// machinePhase is the phase of a live instance whose machine is in state,
// from the recorded phase: a state that says nothing new keeps it, except
// a Reinstalling that is over (reinstalling is false): the machine is
// being made again then (Provisioning).
func machinePhase(recorded api.Phase, state api.MachineState) api.Phase {
	if p := phaseTable[state]; p != "" {
		return p
	}
	if recorded == api.PhaseReinstalling {
		return api.PhaseProvisioning
	}
	return recorded
}

// failedThisGeneration reports whether the instance failed terminally for
// its current generation: failed recorded ProviderError True without a
// RetryAt (a terminal code or a permanent refusal) and observed the
// generation, and the condition is not a failed operation's. A change of
// the spec (a new generation) ends it.
func failedThisGeneration(inst *api.Instance) bool {
	s := &inst.Status
	c := statusCondition(s, api.ConditionProviderError)
	return c != nil && c.Status == api.ConditionTrue && c.RetryAt == nil && !operationFailure(s, c) &&
		s.ObservedGeneration == inst.Generation
}

// failedWhileDeleting names the composite state of an instance whose
// deletion failed terminally (a terminal code or permanent refusal of a
// delete or a get): phase Failed although deletion was requested. Its
// work is acknowledged, so nothing is retried by itself; a repeated
// instances.delete (which queues the instance again) and every resync
// (a deletion is never settled) send the delete again. The phase stays
// Failed while such a pass makes progress, and becomes Deleting when one
// records a retryable failure instead.
func failedWhileDeleting(inst *api.Instance) bool {
	return inst.DeletionRequestedAt != nil && failedThisGeneration(inst)
}

// settledFailure reports whether a live instance needs no pass until its
// spec changes: it failed terminally for this generation, or its machine
// reads error since it last converged for this generation.
func settledFailure(inst *api.Instance) bool {
	s := &inst.Status
	return failedThisGeneration(inst) || bootstrapFailed(inst) ||
		s.Machine != nil && s.Machine.State == api.StateError && s.ObservedGeneration == inst.Generation
}

// reinstalling reports whether a reinstall runs on the machine: the last
// operation is a reinstall that is executing, or that succeeded while the
// phase says Reinstalling and its machine was not seen out of pending
// since (finishOperation records the state unknown until the next look).
func reinstalling(s *api.InstanceStatus) bool {
	last := s.LastOperation
	if last == nil || last.Action != api.ActionReinstall {
		return false
	}
	return last.State == api.OperationExecuting ||
		last.State == api.OperationSucceeded && s.Phase == api.PhaseReinstalling && s.Machine != nil &&
			(s.Machine.State == api.StatePending || s.Machine.State == api.StateUnknown)
}

// operationFailure reports whether c, a ProviderError condition, records
// the failure of the status's last operation (operationFailed), not a
// failure of the reconcile: converge does not resolve it, and it does not
// fail the instance.
func operationFailure(s *api.InstanceStatus, c *api.Condition) bool {
	last := s.LastOperation
	return c.Type == api.ConditionProviderError && c.Status == api.ConditionTrue && last != nil &&
		last.State == api.OperationFailed && c.Message == operationFailureMessage(last)
}

// operationFailureMessage is the ProviderError message of a failed
// operation: "operation <id> (<action>) failed: <its message>".
func operationFailureMessage(op *api.OperationStatus) string {
	return "operation " + op.ID + " (" + string(op.Action) + ") failed: " + op.Message
}

// configurePhase is the phase of an instance whose machine's phase is p,
// once configure is counted (status.access.configure, recorded only for
// pools with a configure step): Running means running and configured, so
// a running machine whose configure did not succeed for this generation
// is Provisioning, or Failed when the configure failed finally.
func configurePhase(inst *api.Instance, p api.Phase) api.Phase {
	a := inst.Status.Access
	if p != api.PhaseRunning || a == nil || a.Configure == nil {
		return p
	}
	c := configureStatus(inst)
	switch {
	case c == nil:
		return api.PhaseProvisioning
	case c.State == api.StepSucceeded:
		return api.PhaseRunning
	case c.Final:
		return api.PhaseFailed
	}
	return api.PhaseProvisioning
}
