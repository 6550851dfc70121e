package reconciler

import (
	"context"
	"errors"
	"time"

	"better-compute.io/compute/pkg/api"
)

// storeError marks a state-store failure inside a reconcile: the work
// message is left for redelivery instead of being recorded as a failure.
type storeError struct{ error }

func (e storeError) Unwrap() error { return e.error }

func isStoreError(err error) bool {
	var se storeError
	return errors.As(err, &se)
}

// now is the reconciler's clock reading in UTC, the time every record
// field and condition carries.
func (r *Reconciler) now() time.Time { return r.o.Clock.Now().UTC() }

// writeStatus applies change to the instance's status and writes it (see
// update).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, change func(*api.InstanceStatus)) error {
	return r.update(ctx, s, func(i *api.Instance) { change(&i.Status) })
}

// update applies change to the instance record and writes it
// (writeRecord), then publishes the phase event when the phase derived
// for the new record differs from the one of the record it replaced. Use
// it for a change that also records what the machine now is outside the
// status: its image, after a reinstall or a create that used a
// reinstall's image.
func (r *Reconciler) update(ctx context.Context, s *scope, change func(*api.Instance)) error {
	replaced, err := r.writeRecord(ctx, s, change)
	if err == nil && s.inst.Status.Phase != replaced {
		r.publishEvent(&s.inst, api.PhaseEvent(s.inst.Status.Phase), conditionMessage(&s.inst.Status))
	}
	return err
}

// writeRecord is the reconciler's one write of an instance record: it
// applies change to the record and writes it at the revision read
// (bus.Table.MutateAt, the project's one CAS loop); the phase is derived
// from the result (derivePhase) and the conditions' transition times
// stamped (stampTransitions). When the write loses (the API changed the
// desired state meanwhile) change is applied again to the fresh record, so
// no concurrent write is lost. It returns the phase of the record it
// replaced. Errors: storeError.
func (r *Reconciler) writeRecord(ctx context.Context, s *scope, change func(*api.Instance)) (api.Phase, error) {
	var replaced api.Phase
	next, rev, err := r.instances.MutateAt(ctx, s.inst.TenantID, s.inst.ID, s.inst, s.rev, func(n *api.Instance) error {
		// s.inst is the record as read (the first try's, or a fresh one
		// after a lost write) while change runs: changes decide on it.
		s.inst = *n
		prev := n.Status
		replaced = prev.Phase
		n.Status = cloneStatus(prev)
		change(n)
		now := r.now()
		stampTransitions(&n.Status, &prev, now)
		sealRecord(n, now)
		return nil
	})
	if err != nil {
		return "", storeError{err}
	}
	s.inst, s.rev = next, rev
	return replaced, nil
}

// cloneStatus copies the slices a change may modify.
func cloneStatus(s api.InstanceStatus) api.InstanceStatus {
	s.Conditions = append([]api.Condition(nil), s.Conditions...)
	return s
}

// stampTransitions sets the LastTransitionTime of every condition of next
// whose status differs from the one in prev (or that prev lacks) to now,
// and keeps prev's for the others.
func stampTransitions(next, prev *api.InstanceStatus, now time.Time) {
	for i := range next.Conditions {
		c := &next.Conditions[i]
		c.LastTransitionTime = now
		if old := statusCondition(prev, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
}

// setCondition sets (or replaces) the condition of c.Type; the write
// stamps its transition time (stampTransitions).
func setCondition(s *api.InstanceStatus, c api.Condition) {
	if old := statusCondition(s, c.Type); old != nil {
		*old = c
		return
	}
	s.Conditions = append(s.Conditions, c)
}

// setReady sets the Ready condition (see api.ConditionReady).
func setReady(s *api.InstanceStatus, ready bool, reason api.ConditionReason, message string) {
	status := api.ConditionFalse
	if ready {
		status = api.ConditionTrue
	}
	setCondition(s, api.Condition{Type: api.ConditionReady, Status: status, Reason: reason, Message: message})
}

// resolve sets condition typ False ("Resolved") when it is True.
func resolve(s *api.InstanceStatus, typ api.ConditionType) {
	if c := statusCondition(s, typ); c != nil && c.Status == api.ConditionTrue {
		setCondition(s, api.Condition{Type: typ, Status: api.ConditionFalse, Reason: api.ReasonResolved})
	}
}

// resolveProviderError resolves the ProviderError condition of a pass
// whose provider calls went through, unless it records a failed one-shot
// operation (operationFailure: kept until the next operation). It
// reports whether one was True and is resolved now.
func resolveProviderError(s *api.InstanceStatus) bool {
	c := statusCondition(s, api.ConditionProviderError)
	if c == nil || c.Status != api.ConditionTrue || operationFailure(s, c) {
		return false
	}
	resolve(s, api.ConditionProviderError)
	return true
}

// providerCondition returns the ProviderError condition, or nil.
func providerCondition(inst *api.Instance) *api.Condition {
	return condition(inst, api.ConditionProviderError)
}

// condition returns the instance's condition of type typ, or nil.
func condition(inst *api.Instance, typ api.ConditionType) *api.Condition {
	return statusCondition(&inst.Status, typ)
}

// statusCondition returns the status's condition of type typ, or nil.
func statusCondition(s *api.InstanceStatus, typ api.ConditionType) *api.Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == typ {
			return &s.Conditions[i]
		}
	}
	return nil
}

// conditionMessage is the phase event's message: the first problem
// condition's reason and message, else the Placed condition's (why the
// machine is not where the pool asked first), "" when there is neither.
func conditionMessage(s *api.InstanceStatus) string {
	for _, c := range s.Conditions {
		if c.Problem() {
			return string(c.Reason) + ": " + c.Message
		}
	}
	if c := statusCondition(s, api.ConditionPlaced); c != nil && c.Status == api.ConditionTrue {
		return string(c.Reason) + ": " + c.Message
	}
	return ""
}
