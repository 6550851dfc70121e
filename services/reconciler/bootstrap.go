package reconciler

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
)

// This file is the bootstrap sequence of host pools' instances (pool
// classes metal-host and vps-host, made by accounts.bootstrap): a
// dedicated server is claimed (ensureMachine's create: the provider names
// the server after the instance, ACCESS_DENIED for one that is not free),
// then this phase takes it through the steps of api.BootstrapStep, one
// step at a time, each recorded in status.bootstrap (a CAS write of the
// instance record) before it is taken:
//
//	Rescue      provider reinstall: arm the rescue system with the
//	            platform's key and reset (hetzner-robot)
//	WaitRescue  SSH answers with hostname "rescue"; its host key is pinned
//	            (status.bootstrap.rescueHostKey) at this first contact
//	Install     installimage -a with the generated config, in the
//	            foreground of the SSH session, with the rescue's pin
//	Reboot      provider power reset into the installed system
//	WaitSystem  SSH answers with the instance's name as hostname; that
//	            host key is pinned (status.access.hostKey) for configure
//	Ready       the pool's configure step (configure.go) follows
//
// Resuming: a pass that finds a step recorded Running does not know
// whether it was taken, and checks the machine first:
//   - Rescue: the rescue system answering means the reset was made: on
//     to WaitRescue; else the rescue boot is asked for again (re-arming
//     and resetting a server that has not reached rescue loses nothing);
//   - Install: the install's SSH session ended with the pass, and
//     installimage with it (it runs in the session's foreground, Guess:
//     like any foreground command it ends on SIGHUP), so it is run again
//     while the rescue system answers, and never is the server reset
//     while the rescue system answers in this step: no reset hits a
//     running install. A server no longer in rescue goes back to Rescue;
//   - Reboot: the installed system answering as the hostname means the
//     reset was made; else the reset is sent (again).
//
// The key: every pass first resolves the pool's private key; one that
// cannot be had takes no step and fails the pass (ProviderError, naming
// the reference), so no rescue boot or reset is made that could not be
// followed over SSH.
//
// Waiting: WaitRescue and WaitSystem look again with the poll delay
// (SSH only: a waiting pass reads the server from the provider only when
// bootstrapReadDue says, at a growing interval, so that waiting
// bootstraps spend little of Robot's 200 server requests an hour);
// past BootstrapOptions.RescueTimeout / SystemTimeout the server goes
// back to Rescue (a new boot, a new rescue pin). A failed or timed-out
// installimage is run again (up to MaxInstalls), a server that does not
// boot its new system is installed again: a half-installed server is
// never reported ready. Past MaxRescues rescue boots or MaxInstalls
// installs the sequence fails (status.bootstrap.final; phase Failed).
//
// Reinstall (instances.reinstall of a host) is the sequence again
// (restartBootstrap); delete releases the server through the provider
// (drain first, then the wipe steps where the pool says release.wipe:
// release.go): the rental is never cancelled.

// BootstrapOptions bounds the bootstrap sequence. Zero values take the
// defaults.
type BootstrapOptions struct {
	// RescueTimeout: how long after the rescue boot was asked for SSH may
	// not answer as the rescue system before it is asked for again
	// (default 10 min: CAPH waits as long for a reset).
	RescueTimeout time.Duration
	// SystemTimeout: how long after the reboot the installed system may
	// not answer before the server is installed again (default 15 min).
	SystemTimeout time.Duration
	// InstallTimeout bounds one installimage run (default 30 min).
	InstallTimeout time.Duration
	// MaxRescues and MaxInstalls: how many rescue boots and installs the
	// sequence makes before it fails (default 3 each).
	MaxRescues, MaxInstalls int
	// LeaseMargin is how long a step's lease outlives the calls it covers
	// (default claimMargin: time to record the outcome, clock skew).
	LeaseMargin time.Duration
	// InstallImage is the installimage command of the rescue system
	// (default DefaultInstallImage: the rescue's own copy; the
	// "installimage" of its interactive shell is an alias).
	InstallImage string
	// WipeCommand is the command a release's Wipe step runs in the
	// rescue system (default DefaultWipeCommand), bounded by
	// InstallTimeout.
	WipeCommand string
	// ReadInterval is how long a waiting step (WaitRescue, WaitSystem, an
	// install to run again) goes without reading the server from the
	// provider after the step began (whose own call read it); each later
	// read waits as long as the step has waited so far, at most
	// MaxReadInterval (defaults 30 s and 10 min). SSH is probed on every
	// pass meanwhile; the reads notice a server gone or named by another.
	ReadInterval, MaxReadInterval time.Duration
}

// DefaultInstallImage is the installimage of Hetzner's rescue system.
const DefaultInstallImage = "/root/.oldroot/nfs/install/installimage"

// rescueHostname is the hostname of Hetzner's rescue system.
const rescueHostname = "rescue"

func (o *BootstrapOptions) defaults() {
	if o.RescueTimeout <= 0 {
		o.RescueTimeout = 10 * time.Minute
	}
	if o.SystemTimeout <= 0 {
		o.SystemTimeout = 15 * time.Minute
	}
	if o.InstallTimeout <= 0 {
		o.InstallTimeout = 30 * time.Minute
	}
	if o.MaxRescues <= 0 {
		o.MaxRescues = 3
	}
	if o.MaxInstalls <= 0 {
		o.MaxInstalls = 3
	}
	if o.LeaseMargin <= 0 {
		o.LeaseMargin = claimMargin
	}
	if o.InstallImage == "" {
		o.InstallImage = DefaultInstallImage
	}
	if o.WipeCommand == "" {
		o.WipeCommand = DefaultWipeCommand
	}
	if o.ReadInterval <= 0 {
		o.ReadInterval = 30 * time.Second
	}
	if o.MaxReadInterval <= 0 {
		o.MaxReadInterval = 10 * time.Minute
	}
}

// bootstrapReadDue reports whether a pass must read the instance's
// machine from the provider (observe): always, except while its bootstrap
// waits in a step that acts over SSH only (WaitRescue, WaitSystem, an
// Install not running) with no operation pending. Then the read is due
// ReadInterval after the step began, and each next one after as long as
// the step had waited at the last (doubling), at most MaxReadInterval
// apart. The recorded machine serves meanwhile: a server's SSH address
// does not change with what it boots.
func (r *Reconciler) bootstrapReadDue(inst *api.Instance) bool {
	b := inst.Status.Bootstrap
	op, last := inst.Desired.Operation, inst.Status.LastOperation
	switch {
	case inst.Bootstrap == nil || b == nil || b.Final || inst.Status.Machine == nil:
		return true
	case op != nil && (last == nil || last.ID != op.ID):
		return true
	case b.Step == api.BootstrapInstall && b.State == api.StepRunning:
		return true
	case b.Step != api.BootstrapWaitRescue && b.Step != api.BootstrapWaitSystem && b.Step != api.BootstrapInstall:
		return true
	}
	read := b.Since
	if b.ReadAt != nil {
		read = *b.ReadAt
	}
	gap := min(max(read.Sub(b.Since), r.o.Bootstrap.ReadInterval), r.o.Bootstrap.MaxReadInterval)
	return !r.o.Clock.Now().Before(read.Add(gap))
}

// bootstrap is the live phase of instances with a bootstrap spec: it
// takes or checks the step status.bootstrap records (see the file's
// comment) and ends the pass until the step Ready is reached.
func (r *Reconciler) bootstrap(ctx context.Context, s *scope) (step, error) {
	b := s.inst.Status.Bootstrap
	switch {
	case s.inst.Bootstrap == nil || s.machine == nil || b != nil && b.Step == api.BootstrapReady:
		return next, nil
	case b != nil && b.Final:
		return end(finished), nil
	case r.bootstrapLease(b) > 0:
		// Another pass takes the step (this replica or another).
		return end(after(min(r.bootstrapLease(b), r.o.PollInterval))), nil
	case s.access == nil:
		return next, api.Errorf(api.CodeInvalidState, "pool %s has no access: a host cannot be bootstrapped without SSH", s.inst.PoolID)
	}
	// Without the pool's key no step is checked or taken (no rescue boot,
	// no reset): its error (naming the reference) is the pass's, recorded
	// by failed as the ProviderError condition with its code, retried
	// with backoff (final for a secret that is no key, INVALID_CONFIG).
	if _, err := r.privateKey(ctx, &s.inst, s.access); err != nil {
		if ctx.Err() != nil {
			return next, storeError{ctx.Err()}
		}
		return next, err
	}
	if b == nil {
		return r.takeRescue(ctx, s)
	}
	switch b.Step {
	case api.BootstrapRescue:
		if b.State == api.StepRunning {
			if host, _, err := r.probe(ctx, s, ""); err == nil && host == rescueHostname {
				return r.waitRescue(ctx, s)
			}
		}
		return r.takeRescue(ctx, s)
	case api.BootstrapWaitRescue:
		return r.waitRescue(ctx, s)
	case api.BootstrapInstall:
		return r.install(ctx, s)
	case api.BootstrapReboot:
		if host, _, err := r.probe(ctx, s, ""); err == nil && host == s.inst.Name {
			return r.waitSystem(ctx, s)
		}
		return r.takeReboot(ctx, s)
	case api.BootstrapWaitSystem:
		return r.waitSystem(ctx, s)
	}
	return next, api.Errorf(api.CodeInternal, "unknown bootstrap step %q", b.Step)
}

// recordStep claims the next step: it writes status.bootstrap as change
// makes it from the recorded one (a fresh struct; counters carried over)
// only while the record still holds the status this pass decided on (a
// CAS write re-applied to a fresh record finds another pass's step there
// and changes nothing: not claimed), then runs the test hook.
func (r *Reconciler) recordStep(ctx context.Context, s *scope, change func(b *api.BootstrapStatus)) (bool, error) {
	from := s.inst.Status.Bootstrap
	claimed := false
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		if claimed = sameBootstrap(st.Bootstrap, from); !claimed {
			return
		}
		b := &api.BootstrapStatus{}
		if st.Bootstrap != nil {
			*b = *st.Bootstrap
		}
		b.Since, b.ReadAt = r.now(), nil
		b.Message, b.Final = "", false
		change(b)
		st.Bootstrap = b
		bootstrapGoesOn(st)
	}); err != nil {
		return false, err
	}
	if !claimed {
		s.log.Info().Msg("bootstrap: another pass took the step")
		return false, nil
	}
	if h := r.o.Hooks.BootstrapStepRecorded; h != nil {
		b := s.inst.Status.Bootstrap
		h(s.inst.ID, b.Step, b.State)
	}
	return true, nil
}

// sameBootstrap reports whether two bootstrap statuses are the same
// record of the sequence (both absent, or the same step, state, time and
// counts).
func sameBootstrap(a, b *api.BootstrapStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Step == b.Step && a.State == b.State && a.Since.Equal(b.Since) && a.Rescues == b.Rescues &&
		a.Installs == b.Installs && a.Final == b.Final
}

// bootstrapLease is how long a step recorded Running stays the pass's
// that took it (0: none runs, or its lease ran out): while it lasts no
// other pass acts on the server. An install holds it for its timeout and
// the calls around it; a rescue boot and a reboot for their provider call.
func (r *Reconciler) bootstrapLease(b *api.BootstrapStatus) time.Duration {
	if b == nil || b.State != api.StepRunning {
		return 0
	}
	hold := r.o.CallTimeout + r.o.Bootstrap.LeaseMargin
	if b.Step == api.BootstrapInstall || b.Step == api.BootstrapWipe { // a wipe runs under InstallTimeout too
		hold += r.o.Bootstrap.InstallTimeout + 2*r.o.CallTimeout
	}
	return max(b.Since.Add(hold).Sub(r.o.Clock.Now()), 0)
}

// lostOr is a store error, or the end of a pass whose step another pass
// claimed (it looks again after the poll interval).
func (r *Reconciler) lostOr(err error) (step, error) {
	if err != nil {
		return next, err
	}
	return end(after(r.o.PollInterval)), nil
}

// takeRescue records Rescue (a rescue boot counted) and asks the provider
// for it (reinstall: arm the rescue system, reset), then WaitRescue.
// Past MaxRescues the sequence fails.
func (r *Reconciler) takeRescue(ctx context.Context, s *scope) (step, error) {
	if b := s.inst.Status.Bootstrap; b != nil && b.Rescues >= r.o.Bootstrap.MaxRescues {
		return r.bootstrapFails(ctx, s, "the server did not come up in the rescue system or its new system after "+
			strconv.Itoa(b.Rescues)+" rescue boots")
	}
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.RescueHostKey = api.BootstrapRescue, api.StepRunning, ""
		b.Rescues++
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	s.log.Info().Str("machine", s.machine.ID).Msg("bootstrap: rescue boot")
	cctx, cancel := r.callCtx(ctx)
	_, err := s.remote.Reinstall(cctx, s.account, s.machine.ID, s.inst.Image)
	cancel()
	if err != nil {
		return next, r.stepNotTaken(ctx, s, err, func(b *api.BootstrapStatus) { b.Rescues-- })
	}
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.Message = api.BootstrapWaitRescue, api.StepWaiting, "rescue boot asked for"
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	return end(after(r.o.PollInterval)), nil
}

// stepNotTaken handles a failed provider call of a step recorded Running:
// when the provider proves it did nothing (details.notExecuted: refused,
// rate limited, never sent) the step is recorded Failed (undo uncounts
// it), so the retry takes it again at once; else it stays Running (it may
// have been taken) and is checked once its lease ends. It returns err for
// failed() to record and retry (or a store error).
func (r *Reconciler) stepNotTaken(ctx context.Context, s *scope, err error, undo func(*api.BootstrapStatus)) error {
	if !api.AsComputeError(err).NotExecuted() {
		return err
	}
	if werr := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		b := *st.Bootstrap
		b.State, b.Message = api.StepFailed, "not taken: "+accessMessage(err)
		undo(&b)
		st.Bootstrap = &b
	}); werr != nil {
		return werr
	}
	return err
}

// waitRescue waits for the rescue system (hostname "rescue"), pins its
// host key at the first contact of this boot, and goes on to Install.
func (r *Reconciler) waitRescue(ctx context.Context, s *scope) (step, error) {
	return r.awaitRescue(ctx, s, rescueSteps{wait: api.BootstrapWaitRescue, work: api.BootstrapInstall,
		waiting: "waiting for the rescue system", rescue: r.takeRescue, run: r.install})
}

// rescueSteps names what a sequence does around a rescue boot: its wait
// step and the step that runs in the rescue system (work), how a wait is
// described, how the rescue boot is asked for again (rescue) and the work
// itself (run). The bootstrap installs; a release wipes (release.go).
type rescueSteps struct {
	wait, work api.BootstrapStep
	waiting    string
	rescue     func(context.Context, *scope) (step, error)
	run        func(context.Context, *scope) (step, error)
}

// awaitRescue waits for the rescue system (hostname "rescue"), pins its
// host key at the first contact of this boot, records the work step
// Waiting and runs it; past RescueTimeout in the wait step the rescue boot
// is asked for again.
func (r *Reconciler) awaitRescue(ctx context.Context, s *scope, rs rescueSteps) (step, error) {
	b := s.inst.Status.Bootstrap
	host, key, err := r.probe(ctx, s, b.RescueHostKey)
	if err == nil && host == rescueHostname {
		if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
			b.Step, b.State, b.RescueHostKey = rs.work, api.StepWaiting, key
			b.Message = "rescue system answers"
		}); err != nil || !ok {
			return r.lostOr(err)
		}
		return rs.run(ctx, s)
	}
	if b.Step == rs.wait && r.now().Sub(b.Since) > r.o.Bootstrap.RescueTimeout {
		return rs.rescue(ctx, s)
	}
	return r.bootstrapWaits(ctx, s, rs.waiting+": "+probeMessage(host, err))
}

// rescueConn connects to the rescue system whose host key this boot
// pinned and checks it still answers as the rescue system. Without a
// connection it returns the pass's outcome instead: the rescue boot asked
// for again (rescue) when another system answers, a wait (described by
// waiting) while SSH does not answer, a store error when ctx ends.
func (r *Reconciler) rescueConn(ctx context.Context, s *scope, waiting string,
	rescue func(context.Context, *scope) (step, error)) (*access.Conn, step, error) {
	target, err := r.bootstrapTarget(ctx, s, s.inst.Status.Bootstrap.RescueHostKey)
	if err != nil {
		return nil, next, err
	}
	cctx, cancel := r.callCtx(ctx)
	conn, err := access.Connect(cctx, target)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, next, storeError{ctx.Err()}
		}
		if errors.Is(err, access.ErrHostKeyChanged) {
			st, err := rescue(ctx, s) // another system answers: the rescue boot is over
			return nil, st, err
		}
		st, err := r.bootstrapWaits(ctx, s, waiting+": "+accessMessage(err))
		return nil, st, err
	}
	if host, err := runHostname(ctx, r, conn); err != nil || host != rescueHostname {
		conn.Close()
		st, err := rescue(ctx, s)
		return nil, st, err
	}
	return conn, next, nil
}

// install runs installimage in the rescue system (recorded Install
// Running first, the install counted); exit 0 goes on to Reboot, a
// failure is recorded and the install run again on the next pass. A
// server that no longer answers as the rescue system goes back to Rescue.
func (r *Reconciler) install(ctx context.Context, s *scope) (step, error) {
	conn, st, err := r.rescueConn(ctx, s, "waiting for the rescue system to install", r.takeRescue)
	if conn == nil {
		return st, err
	}
	defer conn.Close()
	if b := s.inst.Status.Bootstrap; b.Installs >= r.o.Bootstrap.MaxInstalls {
		return r.bootstrapFails(ctx, s, "installimage failed "+strconv.Itoa(b.Installs)+" times: "+b.Message)
	}
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.OutputTail = api.BootstrapInstall, api.StepRunning, ""
		b.Installs++
		b.Message = "installimage runs"
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	s.log.Info().Str("machine", s.machine.ID).Int("install", s.inst.Status.Bootstrap.Installs).Msg("bootstrap: installimage")
	tctx, cancel := context.WithTimeout(ctx, r.o.Bootstrap.InstallTimeout)
	// Standard input is empty and closed: installimage's start-up
	// countdown reads a key from it and so ends at once (CAPH pipes "x").
	res, err := conn.Run(tctx, access.Command{Line: r.installCommand(&s.inst), Limit: api.StepOutputTailBytes})
	cancel()
	if ctx.Err() != nil {
		return next, storeError{ctx.Err()} // stopping: Install stays Running and is run again
	}
	state, _, msg, tail := stepOutcome(res, err)
	if state != api.StepSucceeded {
		s.log.Warn().Str("machine", s.machine.ID).Str("outcome", msg).Msg("bootstrap: installimage failed")
		if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
			b.State, b.Message, b.OutputTail = state, "installimage "+msg, tail
		}); err != nil || !ok {
			return r.lostOr(err)
		}
		return end(after(r.o.Retry.Delay(s.inst.Status.Bootstrap.Installs, 0))), nil
	}
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.Message, b.OutputTail = api.BootstrapReboot, api.StepWaiting, "installimage "+msg, tail
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	return r.takeReboot(ctx, s)
}

// installCommand is installimage's command line: batch mode, the
// instance's name as hostname, its image, software RAID as the spec says
// (default level 1), its drives, the rescue's authorized keys (the
// platform's) taken over, new host keys.
func (r *Reconciler) installCommand(inst *api.Instance) string {
	raid, level := "yes", 1
	if l := inst.Bootstrap.RAIDLevel; l != nil {
		level = *l
	}
	w := []string{r.o.Bootstrap.InstallImage, "-a", "-n", inst.Name, "-i", inst.Image, "-t", "yes", "-G", "yes"}
	if level < 0 {
		raid = "no"
	}
	w = append(w, "-r", raid)
	if level >= 0 {
		w = append(w, "-l", strconv.Itoa(level))
	}
	if len(inst.Bootstrap.Drives) > 0 {
		names := make([]string, len(inst.Bootstrap.Drives))
		for i, d := range inst.Bootstrap.Drives {
			names[i] = strings.TrimPrefix(d, "/dev/")
		}
		w = append(w, "-d", strings.Join(names, ","))
	}
	return strings.Join(w, " ")
}

// takeReboot records Reboot Running and resets the server into its new
// system (provider power reset), then WaitSystem.
func (r *Reconciler) takeReboot(ctx context.Context, s *scope) (step, error) {
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.Message = api.BootstrapReboot, api.StepRunning, "reset into the installed system"
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	cctx, cancel := r.callCtx(ctx)
	err := s.remote.Power(cctx, s.account, s.machine.ID, api.ActionReset)
	cancel()
	if err != nil {
		return next, r.stepNotTaken(ctx, s, err, func(*api.BootstrapStatus) {})
	}
	if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
		b.Step, b.State, b.Message = api.BootstrapWaitSystem, api.StepWaiting, "reset into the installed system sent"
	}); err != nil || !ok {
		return r.lostOr(err)
	}
	return end(after(r.o.PollInterval)), nil
}

// waitSystem waits for the installed system (hostname: the instance's
// name), pins its host key for configure, drain, exec and logs, and
// records Ready. Past SystemTimeout the server is installed again.
func (r *Reconciler) waitSystem(ctx context.Context, s *scope) (step, error) {
	b := s.inst.Status.Bootstrap
	host, key, err := r.probe(ctx, s, "")
	if err == nil && host == s.inst.Name {
		m := s.machine
		if ok, err := r.recordStep(ctx, s, func(b *api.BootstrapStatus) {
			b.Step, b.State, b.Message = api.BootstrapReady, api.StepSucceeded, "installed system answers as "+host
		}); err != nil || !ok {
			return r.lostOr(err)
		}
		if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
			st.Access = cloneAccess(st.Access)
			now := r.now()
			st.Access.HostKey, st.Access.HostKeyMachine, st.Access.HostKeyPinnedAt = key, m.ID, &now
		}); err != nil {
			return next, err
		}
		s.log.Info().Str("machine", m.ID).Msg("bootstrap: installed system ready")
		return next, nil
	}
	if b.Step == api.BootstrapWaitSystem && r.now().Sub(b.Since) > r.o.Bootstrap.SystemTimeout {
		return r.takeRescue(ctx, s) // the new system does not boot: install again
	}
	return r.bootstrapWaits(ctx, s, "waiting for the installed system: "+probeMessage(host, err))
}

// bootstrapWaits records the wait's message (the step and its Since
// kept; ReadAt when the pass read the server) and looks again with the
// poll delay.
func (r *Reconciler) bootstrapWaits(ctx context.Context, s *scope, msg string) (step, error) {
	polls := s.inst.Status.Polls + 1
	now := r.now()
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		b := *st.Bootstrap
		b.Message = msg
		if s.observed {
			b.ReadAt = &now
		}
		st.Bootstrap, st.Polls = &b, polls
		bootstrapGoesOn(st)
	}); err != nil {
		return next, err
	}
	return end(after(r.pollDelay(polls))), nil
}

// bootstrapGoesOn is, inside a write of a bootstrap step taken or waited
// for, that the pass got past what an earlier pass failed on: the pool's
// key resolved (bootstrap resolves it first) and the provider calls of
// the pass went through (a pass that skips the read follows no failed
// read: ReadAt only moves on a read, so the read stays due). A
// ProviderError that earlier pass recorded (a secrets or provider outage)
// is resolved then, not only once the sequence is Ready, with the retries
// counted afresh, and Ready says the bootstrap runs instead of the old
// error. Only a retried failure (RetryAt) is: a terminal one keeps its
// lifetime (a deletion that failed so stays Failed while a later pass
// makes progress, see failedWhileDeleting). Used by the bootstrap and by
// release's wipe.
func bootstrapGoesOn(st *api.InstanceStatus) {
	if c := statusCondition(st, api.ConditionProviderError); c == nil || c.RetryAt == nil {
		return
	}
	if resolveProviderError(st) {
		st.Retries = 0
		setReady(st, false, api.ReasonConverging, "the host's "+string(st.Bootstrap.Step)+" step goes on")
	}
}

// bootstrapFails records the sequence's end: Failed, final (the phase is
// Failed until a reinstall or delete).
func (r *Reconciler) bootstrapFails(ctx context.Context, s *scope, msg string) (step, error) {
	s.log.Warn().Str("error", msg).Msg("bootstrap failed")
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		b := *st.Bootstrap
		b.State, b.Final, b.Message = api.StepFailed, true, msg
		st.Bootstrap = &b
		st.ObservedGeneration = s.inst.Generation
		setReady(st, false, api.ReasonOf(api.CodeInvalidState), msg)
	}); err != nil {
		return next, err
	}
	return end(finished), nil
}

// bootstrapTarget is the machine's SSH target with the given pin ("":
// first contact). Errors: those of accessTarget (a storeError for the
// store).
func (r *Reconciler) bootstrapTarget(ctx context.Context, s *scope, pin string) (access.Target, error) {
	t, err := r.accessTarget(ctx, &s.inst, s.access, s.machine)
	if err != nil {
		return t, err
	}
	t.PinnedHostKey = pin
	return t, nil
}

// probe asks the machine for its hostname over SSH (pin: the host key it
// must present, "" for any) and returns it with the host key it
// presented. Errors: those of accessTarget and pkg/access.
func (r *Reconciler) probe(ctx context.Context, s *scope, pin string) (string, string, error) {
	t, err := r.bootstrapTarget(ctx, s, pin)
	if err != nil {
		return "", "", err
	}
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	conn, err := access.Connect(cctx, t)
	if err != nil {
		return "", conn.HostKey(), err
	}
	defer conn.Close()
	host, err := runHostname(cctx, r, conn)
	return host, conn.HostKey(), err
}

// runHostname runs hostname on conn.
func runHostname(ctx context.Context, r *Reconciler, conn *access.Conn) (string, error) {
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	res, err := conn.Run(cctx, access.Command{Line: "hostname", Limit: 256})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(res.Stdout), nil
}

// probeMessage says what a probe found.
func probeMessage(host string, err error) string {
	if err != nil {
		return accessMessage(err)
	}
	return "SSH answers as " + strconv.Quote(host)
}

// restartBootstrap is the reinstall of a host (an instance with a
// bootstrap spec), claimed by operation: in one write, while the claim
// holds, the operation succeeds, the image becomes the instance's and the
// bootstrap status is cleared, so the next pass starts the sequence again
// at Rescue (the drain step ran before the claim). The pinned host key is
// dropped by the reinstall (pinnedHostKey) and pinned anew at WaitSystem.
func (r *Reconciler) restartBootstrap(ctx context.Context, s *scope, op *api.Operation) error {
	now := r.now()
	return r.update(ctx, s, func(i *api.Instance) {
		st := &i.Status
		if !claimedBy(st, op.ID) {
			return
		}
		done := *st.LastOperation
		done.State, done.Message, done.FinishedAt = api.OperationSucceeded, "the bootstrap sequence starts again with image "+op.Image, &now
		st.LastOperation, st.Polls, st.Bootstrap = &done, 0, nil
		i.Image = op.Image
	})
}

// bootstrapPending reports whether an instance with a bootstrap spec has
// not reached Ready: its phase is Provisioning (Failed once final).
func bootstrapPending(inst *api.Instance) bool {
	b := inst.Status.Bootstrap
	return inst.Bootstrap != nil && (b == nil || b.Step != api.BootstrapReady)
}

// bootstrapFailed reports whether the sequence gave up.
func bootstrapFailed(inst *api.Instance) bool {
	b := inst.Status.Bootstrap
	return inst.Bootstrap != nil && b != nil && b.Final
}
