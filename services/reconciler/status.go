package reconciler

import (
	"context"
	"errors"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// ConditionDrift records a machine found changed or missing out of band.
const ConditionDrift = "Drift"

// storeError marks a state-store failure inside a reconcile: the work
// message is left for redelivery instead of being recorded as a failure.
type storeError struct{ error }

func (e storeError) Unwrap() error { return e.error }

func isStoreError(err error) bool {
	var se storeError
	return errors.As(err, &se)
}

// writeStatus applies change to the instance's status and writes it with
// CAS. On a conflict (the API changed the desired state meanwhile) it reloads
// and applies change to the fresh record, so no concurrent write is lost.
// It publishes an event when the phase changes.
func (r *Reconciler) writeStatus(ctx context.Context, t *target, change func(*api.InstanceStatus)) error {
	return r.writeRecord(ctx, t, func(i *api.Instance) { change(&i.Status) })
}

// writeRecord is writeStatus for a change that also records what the
// machine now is outside the status: its image, after a reinstall or a
// create that used a reinstall's image.
func (r *Reconciler) writeRecord(ctx context.Context, t *target, change func(*api.Instance)) error {
	for attempt := 0; ; attempt++ {
		before := t.inst.Status.Phase
		next := t.inst
		next.Status = cloneStatus(t.inst.Status)
		change(&next)
		if next.DeletionRequestedAt != nil && next.Status.Phase != api.PhaseFailed {
			next.Status.Phase = api.PhaseDeleting
		}
		next.Version++
		next.UpdatedAt = time.Now().UTC()
		rev, err := bus.UpdateJSON(ctx, r.st.Instances, t.key, &next, t.rev)
		if err == nil {
			t.inst, t.rev = next, rev
			if next.Status.Phase != before {
				r.publishEvent(&t.inst, eventType(next.Status.Phase), conditionMessage(&next.Status))
			}
			return nil
		}
		if !api.IsCode(err, api.CodeConflict) || attempt >= 5 {
			return storeError{err}
		}
		var fresh api.Instance
		rev, err = bus.GetJSON(ctx, r.st.Instances, t.key, &fresh)
		if err != nil {
			return storeError{err}
		}
		t.inst, t.rev = fresh, rev
	}
}

// cloneStatus copies the slices a change may modify.
func cloneStatus(s api.InstanceStatus) api.InstanceStatus {
	s.Conditions = append([]api.Condition(nil), s.Conditions...)
	return s
}

// phaseTable maps a machine state to the instance phase ("" keeps the
// current phase: the machine is in a state that says nothing new).
var phaseTable = map[string]string{
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

// phaseOf is the phase for a machine state, from the current phase.
func phaseOf(current, state string) string {
	if current == api.PhaseReinstalling && state == api.StatePending {
		return current
	}
	if p := phaseTable[state]; p != "" {
		return p
	}
	return current
}

// machineMatches reports whether a machine in state satisfies the desired power.
func machineMatches(desiredPower, state string) bool {
	return desiredPower == api.PowerOn && state == api.StateRunning ||
		desiredPower == api.PowerOff && state == api.StateStopped
}

// setCondition sets (or replaces) the condition of c.Type, keeping
// LastTransitionTime when the status does not change.
func setCondition(s *api.InstanceStatus, c api.Condition) {
	now := time.Now().UTC()
	c.LastTransitionTime = now
	for i, old := range s.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// setReady sets the Ready condition (see api.ConditionReady).
func setReady(s *api.InstanceStatus, ready bool, reason, message string) {
	status := api.ConditionFalse
	if ready {
		status = api.ConditionTrue
	}
	setCondition(s, api.Condition{Type: api.ConditionReady, Status: status, Reason: reason, Message: message})
}

// resolve sets condition typ False ("Resolved") when it is True.
func resolve(s *api.InstanceStatus, typ string) {
	for _, c := range s.Conditions {
		if c.Type == typ && c.Status == api.ConditionTrue {
			setCondition(s, api.Condition{Type: typ, Status: api.ConditionFalse, Reason: "Resolved"})
			return
		}
	}
}

// providerCondition returns the ProviderError condition, or nil.
func providerCondition(inst *api.Instance) *api.Condition {
	return condition(inst, api.ConditionProviderError)
}

// condition returns the condition of type typ, or nil.
func condition(inst *api.Instance, typ string) *api.Condition {
	for i := range inst.Status.Conditions {
		if inst.Status.Conditions[i].Type == typ {
			return &inst.Status.Conditions[i]
		}
	}
	return nil
}

func conditionMessage(s *api.InstanceStatus) string {
	for _, c := range s.Conditions {
		if c.Problem() {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}
