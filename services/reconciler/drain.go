package reconciler

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
)

// drain is the delete path's first phase for a pool with a drain step
// (drainBefore the deletion).
func (r *Reconciler) drain(ctx context.Context, s *scope) (step, error) {
	if s.inst.DeletionRequestedAt == nil {
		return next, nil
	}
	return r.drainBefore(ctx, s, s.inst.Status.Machine, *s.inst.DeletionRequestedAt)
}

// drainBefore runs the pool's drain step on machine m, last seen running,
// once for the destructive change of the instance's generation asked for
// at since (a delete, a reinstall; a resize passes the zero time: any
// drain of the generation; a pass interrupted while it runs runs it
// again), with its
// timeout, and records the outcome (status.access.drain, the Drained
// condition, a drained event). The change proceeds after a success, and
// after a failure or timeout when onFailure is "continue" (the default);
// with "fail" the pass ends and the drain is tried again with backoff. A
// machine that cannot be reached counts as a failed drain; one whose host
// key changed, or that was never contacted, is sent nothing.
func (r *Reconciler) drainBefore(ctx context.Context, s *scope, m *api.ExternalMachine, since time.Time) (step, error) {
	a := s.access
	if a == nil || a.Drain == nil || m == nil || m.State != api.StateRunning || drainedSince(&s.inst, since) {
		return next, nil
	}
	gen := s.inst.Generation
	started := r.now()
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		st.Access = cloneAccess(st.Access)
		attempts := 1
		if prev := st.Access.Drain; prev != nil && prev.Generation == gen && !prev.StartedAt.Before(since) {
			attempts = prev.Attempts + 1
		}
		st.Access.Drain = &api.StepStatus{Generation: gen, State: api.StepRunning, Attempts: attempts, StartedAt: started}
	}); err != nil {
		return next, err
	}
	state, exit, msg, tail := r.runDrain(ctx, s, a, m)
	if ctx.Err() != nil {
		return next, storeError{ctx.Err()} // stopping: the drain stays Running and runs again
	}
	proceed := state == api.StepSucceeded || a.Drain.OnFailure != api.OnFailureFail
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		now := r.now()
		st.Access = cloneAccess(st.Access)
		st.Access.Drain = &api.StepStatus{Generation: gen, State: state, Final: proceed, Attempts: attemptsOf(st.Access.Drain, gen),
			ExitCode: exit, Message: "drain " + msg, OutputTail: tail, StartedAt: started, FinishedAt: &now}
		c := api.Condition{Type: api.ConditionDrained, Status: api.ConditionTrue, Reason: api.ReasonStepSucceeded, Message: "drain " + msg}
		switch state {
		case api.StepSucceeded:
		case api.StepTimedOut:
			c.Status, c.Reason = api.ConditionFalse, api.ReasonDrainTimedOut
		default:
			c.Status, c.Reason = api.ConditionFalse, api.ReasonDrainFailed
		}
		setCondition(st, c)
	}); err != nil {
		return next, err
	}
	s.log.Info().Str("state", string(state)).Bool("proceed", proceed).Msg("drain ended")
	r.publishEvent(&s.inst, api.EventDrained, "drain "+msg)
	if !proceed {
		return end(after(r.o.Retry.Delay(attemptsOf(s.inst.Status.Access.Drain, gen), 0))), nil
	}
	return next, nil
}

// runDrain connects to m and runs the pool's drain step with its timeout
// (connecting included); it answers the step's outcome (stepOutcome).
func (r *Reconciler) runDrain(ctx context.Context, s *scope, a *api.PoolAccess,
	m *api.ExternalMachine) (api.StepState, *int, string, string) {
	tctx, cancel := context.WithTimeout(ctx, a.Drain.Timeout(api.DefaultDrainTimeout))
	defer cancel()
	target, err := r.accessTarget(tctx, &s.inst, a, m)
	if err != nil {
		return stepOutcome(access.Result{}, err)
	}
	if target.PinnedHostKey == "" {
		// Never contacted (or re-made since): there is nothing pinned to
		// verify it against, so nothing is sent.
		return api.StepFailed, nil, "not run: no host key is pinned for machine " + m.ID, ""
	}
	res, err := access.Run(tctx, target, access.StepCommand(a.Drain, s.inst.ID, s.inst.Generation, api.StepOutputTailBytes))
	if err != nil && tctx.Err() != nil {
		res.TimedOut, err = true, nil
	}
	return stepOutcome(res, err)
}

// drainedSince reports whether a drain of the instance's generation
// started at or after since ended with the change allowed to proceed.
func drainedSince(inst *api.Instance, since time.Time) bool {
	d := inst.Status.Access
	return d != nil && d.Drain != nil && d.Drain.Final && d.Drain.Generation == inst.Generation && !d.Drain.StartedAt.Before(since)
}
