package reconciler

import (
	"context"

	"better-compute.io/compute/pkg/api"
)

// setPower brings the machine to the desired power level (none while a
// graceful-off's guest is still shutting down). A machine that had
// converged for this generation and is found at the other level was
// changed outside the control plane: s.drift says so (reported once, not
// at every look while it starts) and a drift event is published. An
// action the provider cannot send (UNSUPPORTED: a Robot server whose
// resets include no power press) does not fail the instance: it keeps
// the phase of its machine (e.g. Stopped) with a ProviderError
// UNSUPPORTED condition, retried with backoff (s.powerRefused), until the
// desired level changes back or the server gains the reset.
func (r *Reconciler) setPower(ctx context.Context, s *scope) (step, error) {
	m := s.machine
	action := powerAction(s.inst.Desired.Power, m.State)
	if action == api.ActionOff && r.shuttingDown(&s.inst) {
		action = "" // the guest is stopping by itself: look again later
	}
	if action == "" {
		return next, nil
	}
	cctx, cancel := r.callCtx(ctx)
	err := s.remote.Power(cctx, s.account, m.ID, action)
	cancel()
	if err != nil {
		s.powerRefused = api.IsCode(err, api.CodeUnsupported)
		return next, err
	}
	s.log.Info().Str("machine", m.ID).Str("action", string(action)).Msg("power converged")
	s.inst.Status.Polls = 0 // the machine starts its way from here
	if c := condition(&s.inst, api.ConditionDrift); s.inst.Status.ObservedGeneration == s.inst.Generation &&
		(c == nil || c.Status != api.ConditionTrue) {
		msg := "machine " + m.ID + " found " + string(m.State) + " outside the control plane; power " + string(action)
		s.drift = &api.Condition{Type: api.ConditionDrift, Status: api.ConditionTrue, Reason: api.ReasonPowerChanged, Message: msg}
		s.log.Warn().Str("machine", m.ID).Str("state", string(m.State)).Msg("power changed out of band; correcting")
		r.publishEvent(&s.inst, api.EventDrift, msg)
	}
	return next, nil
}

// shuttingDown reports whether the instance's last operation is a
// graceful-off that succeeded less than GracefulOffTimeout ago: the guest
// was asked to shut down and is given that long before a hard power-off.
func (r *Reconciler) shuttingDown(inst *api.Instance) bool {
	last := inst.Status.LastOperation
	return last != nil && last.Action == api.ActionGracefulOff && last.State == api.OperationSucceeded &&
		last.FinishedAt != nil && r.o.Clock.Now().Sub(*last.FinishedAt) < r.o.GracefulOffTimeout
}

// powerAction is the action that brings a machine in state to the desired
// power level, or "" when none is needed (or the machine is in transition).
func powerAction(desired api.Power, state api.MachineState) api.PowerAction {
	switch {
	case desired == api.PowerOn && state == api.StateStopped:
		return api.ActionOn
	case desired == api.PowerOff && state == api.StateRunning:
		return api.ActionOff
	}
	return ""
}

// machineMatches reports whether a machine in state satisfies the desired power.
func machineMatches(desired api.Power, state api.MachineState) bool {
	return desired == api.PowerOn && state == api.StateRunning ||
		desired == api.PowerOff && state == api.StateStopped
}
