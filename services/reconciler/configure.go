package reconciler

import (
	"context"
	"errors"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
)

// configure runs the pool's configure step on a machine that runs (and
// should), once per generation, before converge reports it ready: it
// connects over SSH (an unreachable machine is waited for: Configured
// False WaitingForSSH, and converge looks again with its growing delay),
// pins the host key at the first contact and refuses any other later
// (HostKeyChanged: never configured), records the step as Running with
// the attempt counted, runs it with its timeout, and records its outcome
// and output tail (Configured True, or False ConfigureFailed; with
// onFailure "fail" the failure is final for the generation). A pass
// interrupted while the step runs leaves it Running: the next pass runs it
// again (at least once; the step is told the instance id and generation).
// A pool with access but no configure step only pins the host key. A
// machine whose addresses are pending is not tried yet (converge looks
// again: addressesPending).
func (r *Reconciler) configure(ctx context.Context, s *scope) (step, error) {
	a, m := s.access, s.machine
	if a == nil || m == nil || m.State != api.StateRunning || s.inst.Desired.Power != api.PowerOn || addressesPending(s) ||
		configureSettled(&s.inst) || a.Configure == nil && pinnedHostKey(&s.inst, m) != "" {
		return next, nil
	}
	gen := s.inst.Generation
	target, err := r.accessTarget(ctx, &s.inst, a, m)
	if err != nil {
		if isStoreError(err) || ctx.Err() != nil {
			return next, storeError{err}
		}
		return next, r.configureWaits(ctx, s, api.ReasonOf(api.AsComputeError(err).Code), accessMessage(err))
	}
	cctx, cancel := r.callCtx(ctx)
	conn, err := access.Connect(cctx, target)
	cancel()
	switch {
	case errors.Is(err, access.ErrHostKeyChanged):
		return next, r.hostKeyRefused(ctx, s, gen, err)
	case err != nil && ctx.Err() != nil:
		return next, storeError{ctx.Err()}
	case err != nil:
		return next, r.configureWaits(ctx, s, api.ReasonWaitingForSSH, accessMessage(err))
	}
	defer conn.Close()
	if a.Configure == nil {
		return next, r.writeStatus(ctx, s, func(st *api.InstanceStatus) { r.pin(st, m, conn.HostKey()) })
	}
	started := r.now()
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		r.pin(st, m, conn.HostKey())
		attempts := 1
		if prev := st.Access.Configure; prev != nil && prev.Generation == gen && prev.Machine == m.ID {
			attempts = prev.Attempts + 1
		}
		st.Access.Configure = &api.StepStatus{Generation: gen, Machine: m.ID, State: api.StepRunning, Attempts: attempts, StartedAt: started}
		setCondition(st, api.Condition{Type: api.ConditionConfigured, Status: api.ConditionFalse, Reason: api.ReasonConfiguring,
			Message: "configure runs"})
	}); err != nil {
		return next, err
	}
	s.log.Info().Int64("generation", gen).Msg("configure started")
	tctx, cancel := context.WithTimeout(ctx, a.Configure.Timeout(api.DefaultConfigureTimeout))
	res, err := conn.Run(tctx, access.StepCommand(a.Configure, s.inst.ID, gen, api.StepOutputTailBytes))
	cancel()
	if ctx.Err() != nil {
		return next, storeError{ctx.Err()} // stopping: the step stays Running and runs again
	}
	state, exit, msg, tail := stepOutcome(res, err)
	final := state != api.StepSucceeded && a.Configure.OnFailure != api.OnFailureRetry
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		now := r.now()
		st.Access = cloneAccess(st.Access)
		st.Access.Configure = &api.StepStatus{Generation: gen, Machine: m.ID, State: state, Final: final,
			Attempts: attemptsOf(st.Access.Configure, gen), ExitCode: exit, Message: "configure " + msg, OutputTail: tail,
			StartedAt: started, FinishedAt: &now}
		c := api.Condition{Type: api.ConditionConfigured, Status: api.ConditionTrue, Reason: api.ReasonStepSucceeded, Message: "configure " + msg}
		if state != api.StepSucceeded {
			c.Status, c.Reason = api.ConditionFalse, api.ReasonConfigureFailed
		}
		setCondition(st, c)
		resolve(st, api.ConditionHostKeyChanged)
	}); err != nil {
		return next, err
	}
	s.log.Info().Int64("generation", gen).Str("state", string(state)).Msg("configure ended")
	r.publishEvent(&s.inst, api.EventConfigured, "configure "+msg)
	return next, nil
}

// configureWaits records that configure could not start (Configured
// False with reason and message); converge looks again later.
func (r *Reconciler) configureWaits(ctx context.Context, s *scope, reason api.ConditionReason, msg string) error {
	s.log.Info().Str("reason", string(reason)).Str("error", msg).Msg("configure waits")
	return r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		setCondition(st, api.Condition{Type: api.ConditionConfigured, Status: api.ConditionFalse, Reason: reason, Message: msg})
	})
}

// hostKeyRefused records a machine that presented another host key than
// the pinned one: HostKeyChanged True, and (with a configure step) the
// configure refused, final for the generation.
func (r *Reconciler) hostKeyRefused(ctx context.Context, s *scope, gen int64, err error) error {
	s.log.Warn().Str("error", err.Error()).Msg("host key changed; machine not configured")
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		setCondition(st, api.Condition{Type: api.ConditionHostKeyChanged, Status: api.ConditionTrue,
			Reason: api.ReasonHostKeyChanged, Message: err.Error()})
		if s.access.Configure == nil {
			return
		}
		now := r.now()
		st.Access = cloneAccess(st.Access)
		st.Access.Configure = &api.StepStatus{Generation: gen, Machine: s.machine.ID, State: api.StepFailed, Final: true,
			Attempts: attemptsOf(st.Access.Configure, gen), Message: "refused: " + err.Error(), StartedAt: now, FinishedAt: &now}
		setCondition(st, api.Condition{Type: api.ConditionConfigured, Status: api.ConditionFalse,
			Reason: api.ReasonHostKeyChanged, Message: err.Error()})
	}); err != nil {
		return err
	}
	r.publishEvent(&s.inst, api.EventConfigured, "configure refused: "+err.Error())
	return nil
}

// cloneAccess copies a status's access (a fresh one for nil), so a change
// never writes into the record it replaces.
func cloneAccess(a *api.AccessStatus) *api.AccessStatus {
	if a == nil {
		return &api.AccessStatus{}
	}
	c := *a
	return &c
}

// attemptsOf is the attempts a step status counts for gen (0: none).
func attemptsOf(s *api.StepStatus, gen int64) int {
	if s == nil || s.Generation != gen {
		return 0
	}
	return s.Attempts
}

// configureSettled reports whether configure needs no run for the
// instance's generation: it succeeded, or failed finally.
func configureSettled(inst *api.Instance) bool {
	c := configureStatus(inst)
	return c != nil && (c.State == api.StepSucceeded || c.Final)
}

// configureStatus is the configure status of the instance's generation
// on its recorded machine, or nil: an outcome of another machine (one
// deleted out of band and re-made, or none recorded yet) is none.
func configureStatus(inst *api.Instance) *api.StepStatus {
	a, m := inst.Status.Access, inst.Status.Machine
	if a == nil || a.Configure == nil || a.Configure.Generation != inst.Generation || m == nil || a.Configure.Machine != m.ID {
		return nil
	}
	return a.Configure
}

// configurePending reports whether converge must not report the machine
// ready yet: the pool has a configure step, the machine runs as desired,
// and configure did not succeed for this generation.
func configurePending(s *scope) bool {
	c := configureStatus(&s.inst)
	return s.access != nil && s.access.Configure != nil && s.machine != nil && s.machine.State == api.StateRunning &&
		s.inst.Desired.Power == api.PowerOn && (c == nil || c.State != api.StepSucceeded)
}
