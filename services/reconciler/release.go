package reconciler

import (
	"context"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
)

// This file is the wipe of a host's release (instances.delete of a
// bootstrapped server whose pool says release.wipe): after the drain
// step and before deleteMachine un-claims the server (the rental is
// never cancelled), these steps are recorded in status.bootstrap (a CAS
// write of the instance record, recordStep) before each is taken:
//
//	WipeRescue      provider reinstall: arm the rescue system, reset
//	WipeWaitRescue  SSH answers with hostname "rescue"; its host key is
//	                pinned (status.bootstrap.rescueHostKey)
//	Wipe            BootstrapOptions.WipeCommand over SSH in the rescue
//	                system, with that pin
//	Wiped           the server is un-claimed next (deleteMachine)
//
// Resuming: WipeRescue found Running is checked over SSH (the rescue
// answering means the reset was made) before it is asked for again; Wipe
// found Running once its lease ended is run again (wiping twice loses
// nothing). A rescue that does not answer within RescueTimeout is asked
// for again, without a limit: the server is never un-claimed unwiped,
// unless nothing of ours was installed on it (nothingInstalled) or it is
// no longer ours. No step is taken without the pool's key.

// DefaultWipeCommand wipes every disk's partition tables and filesystem
// signatures (the rescue system's wipefs, on each whole disk lsblk lists,
// RAM, loop and optical devices left out): the disks boot nothing and an
// OS sees them empty. The data is not overwritten (BootstrapOptions.
// WipeCommand can run blkdiscard or shred instead).
const DefaultWipeCommand = "wipefs --all --force $(lsblk --nodeps --noheadings --paths --output NAME --exclude 1,7,11)"

// wipeStep reports whether step is one of the release's wipe steps.
func wipeStep(step api.BootstrapStep) bool {
	switch step {
	case api.BootstrapWipeRescue, api.BootstrapWipeWaitRescue, api.BootstrapWipe, api.BootstrapWiped:
		return true
	}
	return false
}

// wipe is the delete path's phase between drain and deleteMachine: for a
// host whose pool says release.wipe it takes or checks the wipe step
// status.bootstrap records (see the file's comment) and ends the pass
// until Wiped.
func (r *Reconciler) wipe(ctx context.Context, s *scope) (step, error) {
	m := s.inst.Status.Machine
	if s.inst.Bootstrap == nil || m == nil || s.pool == nil || s.pool.Release == nil || !s.pool.Release.Wipe {
		return next, nil
	}
	b := s.inst.Status.Bootstrap
	switch {
	case b != nil && b.Step == api.BootstrapWiped:
		return next, nil
	case r.bootstrapLease(b) > 0:
		return end(after(min(r.bootstrapLease(b), r.o.PollInterval))), nil
	case nothingInstalled(&s.inst):
		s.log.Info().Str("machine", m.ID).Msg("release: nothing of ours was installed; not wiped")
		return next, nil
	case s.access == nil:
		return next, api.Errorf(api.CodeInvalidState, "pool %s has no access: a host cannot be wiped without SSH", s.inst.PoolID)
	}
	// Without the pool's key no step is checked or taken (no rescue boot,
	// no reset: nothing could follow it over SSH): its error (naming
	// access.privateKey and the reference) is the pass's, recorded by
	// failed as the ProviderError condition, retried with backoff; the
	// server stays claimed until the wipe can run, or until it is no
	// longer ours (gone, or its name cleared in Robot by an operator who
	// wiped it by hand): then it is not wiped (never touched).
	if _, err := r.privateKey(ctx, &s.inst, s.access); err != nil {
		if ctx.Err() != nil {
			return next, storeError{ctx.Err()}
		}
		cctx, cancel := r.callCtx(ctx)
		observed, getErr := s.remote.Get(cctx, s.account, m.ID)
		cancel()
		if getErr == nil && observed == nil {
			s.log.Warn().Str("machine", m.ID).Msg("release: server not ours any more; not wiped")
			return next, nil
		}
		return next, err
	}
	s.machine = m
	switch {
	case b == nil || !wipeStep(b.Step):
		return r.takeWipeRescue(ctx, s)
	case b.Step == api.BootstrapWipeRescue:
		if b.State == api.StepRunning {
			if host, _, err := r.probe(ctx, s, ""); err == nil && host == rescueHostname {
				return r.waitWipeRescue(ctx, s)
			}
		}
		return r.takeWipeRescue(ctx, s)
	case b.Step == api.BootstrapWipeWaitRescue:
		return r.waitWipeRescue(ctx, s)
	}
	return r.runWipe(ctx, s)
}

// nothingInstalled reports whether a host's disks hold nothing of this
// platform, so a release need not wipe them: status.bootstrap records no
// installimage run (installs 0) and no wipe step, no installed system
// ever answered (no host key pinned in status.access), and no reinstall
// (which starts status.bootstrap afresh) was the last operation.
func nothingInstalled(inst *api.Instance) bool {
	st := &inst.Status
	b, a, op := st.Bootstrap, st.Access, st.LastOperation
	return (b == nil || b.Installs == 0 && !wipeStep(b.Step)) && (a == nil || a.HostKey == "") &&
		(op == nil || op.Action != api.ActionReinstall)
}

// takeWipeRescue records WipeRescue (a fresh sequence: counters from 0
// when it follows the bootstrap's steps) and asks the provider for the
// rescue boot, then WipeWaitRescue.
func (r *Reconciler) takeWipeRescue(ctx context.Context, s *scope) (step, error) {
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		if !wipeStep(b.Step) {
			b.Rescues, b.Installs, b.OutputTail = 0, 0, ""
		}
		b.Step, b.State, b.RescueHostKey = api.BootstrapWipeRescue, api.StepRunning, ""
		b.Rescues++
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	s.log.Info().Str("machine", s.machine.ID).Msg("release: rescue boot to wipe")
	cctx, cancel := r.callCtx(ctx)
	_, err := s.remote.Reinstall(cctx, s.account, s.machine.ID, s.inst.Image)
	cancel()
	if api.IsCode(err, api.CodeNotFound, api.CodeAccessDenied) {
		// Gone, or no longer ours: nothing of this platform to wipe (and
		// never touch another's); deleteMachine finds it so.
		s.log.Warn().Str("machine", s.machine.ID).AnErr("error", err).Msg("release: server not ours any more; not wiped")
		return next, nil
	}
	if err != nil {
		return next, r.stepNotTaken(ctx, s, err, func(b *api.BootstrapStatus) { b.Rescues-- })
	}
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.Message = api.BootstrapWipeWaitRescue, api.StepWaiting, "rescue boot to wipe asked for"
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	return end(after(r.o.PollInterval)), nil
}

// waitWipeRescue waits for the rescue system, pins its host key at the
// first contact of this boot and goes on to Wipe; past RescueTimeout the
// rescue boot is asked for again.
func (r *Reconciler) waitWipeRescue(ctx context.Context, s *scope) (step, error) {
	return r.awaitRescue(ctx, s, rescueSteps{wait: api.BootstrapWipeWaitRescue, work: api.BootstrapWipe,
		waiting: "waiting for the rescue system to wipe", rescue: r.takeWipeRescue, run: r.runWipe})
}

// runWipe runs the wipe command in the rescue system (recorded Wipe
// Running first); exit 0 records Wiped and the pass goes on to un-claim
// the server; a failure is recorded and run again after the backoff. A
// server no longer in its rescue system goes back to WipeRescue.
func (r *Reconciler) runWipe(ctx context.Context, s *scope) (step, error) {
	conn, st, err := r.rescueConn(ctx, s, "waiting for the rescue system to wipe", r.takeWipeRescue)
	if conn == nil {
		return st, err
	}
	defer conn.Close()
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.OutputTail, b.Message = api.BootstrapWipe, api.StepRunning, "", "wiping the disks"
		b.Installs++ // the wipe runs of this release
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	s.log.Info().Str("machine", s.machine.ID).Msg("release: wiping the disks")
	tctx, cancel := context.WithTimeout(ctx, r.o.Bootstrap.InstallTimeout)
	res, err := conn.Run(tctx, access.Command{Line: r.o.Bootstrap.WipeCommand, Limit: api.StepOutputTailBytes})
	cancel()
	if ctx.Err() != nil {
		return next, storeError{ctx.Err()} // stopping: Wipe stays Running and is run again
	}
	state, _, msg, tail := stepOutcome(res, err)
	if state != api.StepSucceeded {
		s.log.Warn().Str("machine", s.machine.ID).Str("outcome", msg).Msg("release: wipe failed")
		if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
			b.State, b.Message, b.OutputTail = state, "wipe "+msg, tail
		}); err != nil || !ok {
			return r.lostOr(err)
		}
		return end(after(r.o.Retry.Delay(s.inst.Status.Bootstrap.Installs, 0))), nil
	}
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.Message, b.OutputTail = api.BootstrapWiped, api.StepSucceeded, "wipe "+msg, tail
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	return next, nil
}
