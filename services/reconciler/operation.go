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
	return max(last.StartedAt.Add(r.o.CallTimeout+claimMargin).Sub(r.o.Clock.Now()), 0)
}

// operation executes the instance's pending one-shot operation at most
// once: it is claimed with a CAS write (state Executing) before the provider
// is called, and its outcome recorded after. A claim is a lease
// (operationLease): while it lasts, the claiming pass (this replica or
// another) may still be running it, and reconcile leaves the instance alone.
// An operation still Executing after that was interrupted after it may have been sent: it
// becomes Unknown and is never sent again (a reset or reinstall must not
// run twice). A call that failed is sent again (claimed anew after the
// backoff) only when the provider proves it did not run
// (details.notExecuted: a lock, a conflict, a 429, a refused connection);
// one that got no reply is Unknown; any other failure is Failed, and
// recorded as the ProviderError condition too (operationFailed). The pass
// ends here whenever an operation was acted on. A reinstall is preceded by
// the pool's drain step (drainBefore), before it is claimed. A
// graceful-off the provider cannot send (UNSUPPORTED) goes to the OS over
// SSH where the pool has access (gracefulOffOverSSH).
func (r *Reconciler) operation(ctx context.Context, s *scope) (step, error) {
	op := s.inst.Desired.Operation
	last := s.inst.Status.LastOperation
	switch {
	case op == nil:
		return next, nil
	case last != nil && last.ID == op.ID && last.State == api.OperationExecuting:
		// Its lease ran out (reconcile waits while it lasts).
		err := r.finishOperation(ctx, s, op.ID, api.OperationUnknown, "interrupted after it was sent; not repeated", nil)
		return end(after(0)), err
	case last != nil && last.ID == op.ID:
		return next, nil
	}
	if op.Action == api.ActionReinstall { // destructive: the pool's drain step first
		if st, err := r.drainBefore(ctx, s, s.machine, op.RequestedAt); err != nil || st.end {
			return st, err
		}
	}
	claimed := false
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		// Re-applied to the fresh record when the CAS write loses: another
		// pass (a replica, or a newer work message) may have claimed it, or
		// run it and the next one: only the operation the record still
		// wants, never claimed before, is claimed.
		current := s.inst.Desired.Operation
		if claimed = current != nil && current.ID == op.ID && (st.LastOperation == nil || st.LastOperation.ID != op.ID); !claimed {
			return
		}
		if c := statusCondition(st, api.ConditionProviderError); c != nil && operationFailure(st, c) {
			resolve(st, api.ConditionProviderError) // the failure of the operation before
		}
		st.LastOperation = &api.OperationStatus{ID: op.ID, Action: op.Action, State: api.OperationExecuting, StartedAt: r.now()}
	}); err != nil {
		return next, err
	}
	if !claimed {
		return end(after(r.o.PollInterval)), nil // another pass runs it, or ran it
	}
	if op.Action == api.ActionReinstall && s.inst.Bootstrap != nil {
		return end(after(0)), r.restartBootstrap(ctx, s, op) // a host's reinstall is its bootstrap again
	}
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	var callErr error
	if op.Action == api.ActionReinstall {
		_, callErr = s.remote.Reinstall(cctx, s.account, s.machine.ID, op.Image)
	} else {
		callErr = s.remote.Power(cctx, s.account, s.machine.ID, op.Action)
		if op.Action == api.ActionGracefulOff && api.IsCode(callErr, api.CodeUnsupported) {
			callErr = r.gracefulOffOverSSH(ctx, s, callErr) // the provider cannot reach the OS; SSH may
		}
	}
	s.log.Info().Str("operation", op.ID).Str("action", string(op.Action)).AnErr("error", callErr).Msg("operation executed")
	if callErr == nil {
		return end(after(0)), r.finishOperation(ctx, s, op.ID, api.OperationSucceeded, "", nil)
	}
	ce := api.AsComputeError(callErr)
	switch {
	case ce.NotExecuted() && !permanentRefusal(ce) && ce.Code != api.CodeNotFound:
		// The provider proves it did not run (423 locked, 409 conflict,
		// 429, a refused connection) and it can pass later: release the
		// claim and send the same operation again after the backoff.
		if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
			if claimedBy(st, op.ID) {
				st.LastOperation = last
			}
		}); err != nil {
			return next, err
		}
		return next, callErr // failed records it and ends the pass
	case !ce.NotExecuted() && noReply(ce):
		return end(after(0)), r.finishOperation(ctx, s, op.ID, api.OperationUnknown, "no reply, it may have run; not repeated: "+ce.Error(), nil)
	case !ce.NotExecuted() && ce.Code == api.CodeRateLimited:
		// Accepted, then the look at its outcome was rate limited (e.g. the
		// action poll got a 429): it may have run, so it is not Failed.
		return end(after(0)), r.finishOperation(ctx, s, op.ID, api.OperationUnknown,
			"accepted, but its outcome could not be read; not repeated: "+ce.Error(), nil)
	}
	return end(after(0)), r.finishOperation(ctx, s, op.ID, api.OperationFailed, ce.Error(), ce)
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
// A reinstall that succeeded makes its image the instance's. What any
// reinstall left behind is unknown until the next look (a booting or
// stopped VM, an old disk): the record does not claim the machine runs.
// A Failed operation (failure, its error) is also recorded as the
// ProviderError condition (see operationFailed).
func (r *Reconciler) finishOperation(ctx context.Context, s *scope, id string, state api.OperationState,
	message string, failure *api.ComputeError) error {
	now := r.now()
	return r.update(ctx, s, func(i *api.Instance) {
		st := &i.Status
		if !claimedBy(st, id) {
			return
		}
		op := *st.LastOperation
		op.State, op.Message, op.FinishedAt = state, message, &now
		st.LastOperation = &op
		st.Polls = 0 // the machine starts its way from here
		if op.Action == api.ActionReinstall && st.Machine != nil {
			m := *st.Machine
			m.State = api.StateUnknown
			st.Machine = &m
		}
		if want := i.Desired.Operation; state == api.OperationSucceeded && want != nil && want.ID == id && want.Action == api.ActionReinstall {
			i.Image = want.Image
		}
		if failure != nil {
			operationFailed(st, &op, failure)
		}
	})
}

// operationFailed records a failed one-shot operation (a power action or
// a reinstall) as the ProviderError condition: True, with the error's code
// as reason and a message naming the operation (operationFailureMessage).
// Its lifetime: it stays until the next operation is claimed (operation
// resolves it), or a later failure of another kind replaces it (failed);
// the next successful look does not resolve it (converge), and it does not
// fail the instance (failedThisGeneration). Ready is left to the looks at
// the machine, which may well be as declared.
func operationFailed(s *api.InstanceStatus, op *api.OperationStatus, ce *api.ComputeError) {
	setCondition(s, api.Condition{Type: api.ConditionProviderError, Status: api.ConditionTrue,
		Reason: api.ReasonOf(ce.Code), Message: operationFailureMessage(op)})
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
