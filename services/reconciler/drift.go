package reconciler

import (
	"context"

	"better-compute.io/compute/pkg/api"
)

// drift ends the pass when observe found the recorded machine gone
// (machineVanished) or going (machineGoing) although nobody asked for the
// instance's deletion.
func (r *Reconciler) drift(ctx context.Context, s *scope) (step, error) {
	switch {
	case s.machine == nil:
		return r.machineVanished(ctx, s, s.inst.Status.Machine)
	case s.machine.State == api.StateDeleting || s.machine.State == api.StateDeleted:
		return r.machineGoing(ctx, s, s.machine)
	}
	return next, nil
}

// machineVanished handles a machine deleted out of band: it is forgotten
// and created again with the same key on the next pass (drift repair). No
// create of the key is outstanding (the key's machine was found, and is
// gone), so the next one is a first attempt. What access learnt of it
// goes with it (forgetAccess): the re-made machine is pinned and
// configured anew, and is not Ready before.
func (r *Reconciler) machineVanished(ctx context.Context, s *scope, m *api.ExternalMachine) (step, error) {
	s.log.Warn().Str("machine", m.ID).Msg("machine disappeared out of band; recreating")
	msg := "machine " + m.ID + " was deleted outside the control plane; recreating"
	err := r.reportMissing(ctx, s, msg, func(st *api.InstanceStatus) {
		st.Machine = nil
		st.CreateRequested = false
		forgetAccess(st, msg)
	})
	return end(after(0)), err
}

// machineGoing handles a machine being deleted out of band (nobody asked
// for the instance's deletion): its machine is watched until it is gone
// (machineVanished then re-creates it; the key and name are the old
// machine's until then).
func (r *Reconciler) machineGoing(ctx context.Context, s *scope, m *api.ExternalMachine) (step, error) {
	polls := s.inst.Status.Polls + 1
	err := r.reportMissing(
		ctx,
		s,
		"machine "+m.ID+" is being deleted outside the control plane; recreated once it is gone",
		func(st *api.InstanceStatus) {
			st.Machine = m
			st.Retries, st.Polls = 0, polls
		},
	)
	return end(after(r.pollDelay(polls))), err
}

// reportMissing records, with change, that the instance's machine is gone
// or going out of band: Drift and Ready saying so (msg); the phase derived
// from that is Provisioning (it is re-created). The drift event is
// published once, when the Drift condition did not say so yet.
func (r *Reconciler) reportMissing(ctx context.Context, s *scope, msg string, change func(*api.InstanceStatus)) error {
	reported := machineMissing(&s.inst)
	err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		change(st)
		setCondition(st, api.Condition{Type: api.ConditionDrift, Status: api.ConditionTrue, Reason: api.ReasonMachineMissing, Message: msg})
		setReady(st, false, api.ReasonMachineMissing, msg)
	})
	if err == nil && !reported {
		r.publishEvent(&s.inst, api.EventDrift, msg)
	}
	return err
}

// machineMissing reports whether the instance's machine was found deleted
// out of band and not re-created yet (Drift True, MachineMissing).
func machineMissing(inst *api.Instance) bool {
	c := condition(inst, api.ConditionDrift)
	return c != nil && c.Status == api.ConditionTrue && c.Reason == api.ReasonMachineMissing
}
