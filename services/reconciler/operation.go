package reconciler

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
)

// claimMargin is how long an operation's claim outlives the provider call
// it covers: time for the claiming pass to record the outcome, and for clock
// skew between replicas.
const claimMargin = 10 * time.Second

// operationLease is how long the instance's pending operation stays claimed
// by the pass executing it (0 when none is executing, or its lease ran
// out). While it lasts no other pass acts on the machine: mid-operation it
// may read as absent (a Proxmox reinstall destroys the VM and clones into
// its VMID) or in transition.
func (r *Reconciler) operationLease(inst *api.Instance) time.Duration {
	op, last := inst.Desired.Operation, inst.Status.LastOperation
	if op == nil || last == nil || last.ID != op.ID || last.State != api.OperationExecuting {
		return 0
	}
	return max(time.Until(last.StartedAt.Add(r.o.CallTimeout+claimMargin)), 0)
}

// runOperation executes the instance's pending one-shot operation at most
// once: it is claimed with a CAS write (state Executing) before the provider
// is called, and its outcome recorded after. A claim is a lease
// (operationLease): while it lasts, the claiming pass (this replica or
// another) may still be running it, and reconcile leaves the instance alone.
// An operation still Executing after that was interrupted after it may have been sent: it
// becomes Unknown and is never sent again (a reset or reinstall must not
// run twice). A call that failed is sent again (claimed anew after the
// backoff) only when the provider proves it did not run
// (details.notExecuted: a lock, a conflict, a 429, a refused connection);
// one that got no reply is Unknown; any other failure is Failed.
// done reports that this pass ends here (with out).
func (r *Reconciler) runOperation(ctx context.Context, t *target, m *api.ExternalMachine) (out outcome, done bool, err error) {
	op := t.inst.Desired.Operation
	last := t.inst.Status.LastOperation
	switch {
	case op == nil:
		return outcome{}, false, nil
	case last != nil && last.ID == op.ID && last.State == api.OperationExecuting:
		// Its lease ran out (reconcile waits while it lasts).
		err := r.finishOperation(ctx, t, op.ID, api.OperationUnknown, "interrupted after it was sent; not repeated")
		return after(0), true, err
	case last != nil && last.ID == op.ID:
		return outcome{}, false, nil
	}
	claimed := false
	if err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) {
		// Re-applied to the fresh record when the CAS write loses: another
		// pass (a replica, or a newer work message) may have claimed it, or
		// run it and the next one: only the operation the record still
		// wants, never claimed before, is claimed.
		current := t.inst.Desired.Operation
		if claimed = current != nil && current.ID == op.ID && (s.LastOperation == nil || s.LastOperation.ID != op.ID); !claimed {
			return
		}
		s.LastOperation = &api.OperationStatus{ID: op.ID, Action: op.Action, State: api.OperationExecuting, StartedAt: time.Now().UTC()}
		if op.Action == api.ActionReinstall {
			s.Phase = api.PhaseReinstalling
		}
	}); err != nil {
		return outcome{}, true, err
	}
	if !claimed {
		return after(r.o.PollInterval), true, nil // another pass runs it, or ran it
	}
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	var callErr error
	if op.Action == api.ActionReinstall {
		_, callErr = t.remote.Reinstall(cctx, t.account, m.ID, op.Image)
	} else {
		callErr = t.remote.Power(cctx, t.account, m.ID, op.Action)
	}
	t.log.Info().Str("operation", op.ID).Str("action", op.Action).AnErr("error", callErr).Msg("operation executed")
	if callErr == nil {
		return after(0), true, r.finishOperation(ctx, t, op.ID, api.OperationSucceeded, "")
	}
	ce := api.AsComputeError(callErr)
	switch {
	case ce.NotExecuted() && !ce.Code.Terminal() && !permanentRefusal(ce) && ce.Code != api.CodeNotFound:
		// The provider proves it did not run (423 locked, 409 conflict,
		// 429, a refused connection) and it can pass later: release the
		// claim and send the same operation again after the backoff.
		if err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) {
			if claimedBy(s, op.ID) {
				s.LastOperation = last
			}
		}); err != nil {
			return outcome{}, true, err
		}
		out, err := r.failed(ctx, t, callErr)
		return out, true, err
	case !ce.NotExecuted() && noReply(ce):
		return after(0), true, r.finishOperation(ctx, t, op.ID, api.OperationUnknown, "no reply, it may have run; not repeated: "+ce.Error())
	case !ce.NotExecuted() && ce.Code == api.CodeRateLimited:
		// Accepted, then the look at its outcome was rate limited (e.g. the
		// action poll got a 429): it may have run, so it is not Failed.
		return after(0), true, r.finishOperation(ctx, t, op.ID, api.OperationUnknown,
			"accepted, but its outcome could not be read; not repeated: "+ce.Error())
	}
	return after(0), true, r.finishOperation(ctx, t, op.ID, api.OperationFailed, ce.Error())
}

// noReply reports whether a call's error says no reply came: it ended
// with its deadline (UNAVAILABLE) or the API was not reached or hung up
// (PROVIDER_ERROR with status 0).
func noReply(ce *api.ComputeError) bool {
	status, _ := ce.APIStatus()
	return ce.Code == api.CodeUnavailable || ce.Code == api.CodeProviderError && status == 0
}

// claimedBy reports whether the status still holds operation id's claim.
func claimedBy(s *api.InstanceStatus, id string) bool {
	return s.LastOperation != nil && s.LastOperation.ID == id && s.LastOperation.State == api.OperationExecuting
}

// finishOperation records operation id's outcome (state, message), only
// while its claim is still in the record: a pass whose view is stale never
// overwrites an outcome another pass recorded.
// A reinstall that succeeded makes its image the instance's; one that did
// not leaves the machine's state unknown until the next look.
func (r *Reconciler) finishOperation(ctx context.Context, t *target, id, state, message string) error {
	now := time.Now().UTC()
	return r.writeRecord(ctx, t, func(i *api.Instance) {
		s := &i.Status
		if !claimedBy(s, id) {
			return
		}
		op := *s.LastOperation
		op.State, op.Message, op.FinishedAt = state, message, &now
		s.LastOperation = &op
		s.Polls = 0 // the machine starts its way from here
		if s.Phase == api.PhaseReinstalling && state != api.OperationSucceeded {
			s.Phase = api.PhaseProvisioning
		}
		if op.Action == api.ActionReinstall && state != api.OperationSucceeded && s.Machine != nil {
			// What a reinstall left behind is unknown until the next look
			// (a stopped VM, an old disk): the record does not claim it runs.
			m := *s.Machine
			m.State = api.StateUnknown
			s.Machine = &m
		}
		if want := i.Desired.Operation; state == api.OperationSucceeded && want != nil && want.ID == id && want.Action == api.ActionReinstall {
			i.Image = want.Image
		}
	})
}

// unclaimedReinstall is the instance's pending reinstall when no pass has
// claimed it yet, else nil.
func unclaimedReinstall(inst *api.Instance) *api.Operation {
	op, last := inst.Desired.Operation, inst.Status.LastOperation
	if op == nil || op.Action != api.ActionReinstall || last != nil && last.ID == op.ID {
		return nil
	}
	return op
}
