package reconciler

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// outcome is what to do with a work message after a reconcile.
type outcome struct {
	// requeue > 0 (or now) asks for another look after that delay; done acks.
	done    bool
	requeue time.Duration
}

var finished = outcome{done: true}

func after(d time.Duration) outcome { return outcome{requeue: d} }

// handle reconciles the instance a work message names and acknowledges,
// delays or (when the state store is unreachable) abandons the message, which
// is then redelivered after AckWait (dispatch keeps a held message's
// AckWait from running out meanwhile). A pass cancelled by Stop hands its
// work back at once.
func (r *Reconciler) handle(ctx context.Context, msg jetstream.Msg) {
	tenant, id, ok := parseWorkSubject(msg.Subject())
	if !ok {
		r.log.Error().Str("subject", msg.Subject()).Msg("malformed work subject; dropped")
		_ = msg.Term()
		return
	}
	log := r.log.With().Str("tenant", tenant).Str("instance", id).Logger()
	out, err := r.reconcile(ctx, log, tenant, id)
	switch {
	case err != nil && ctx.Err() != nil:
		_ = msg.Nak() // stopping: hand the work back now
	case err != nil:
		// State store trouble: leave the message unacknowledged; redelivery retries.
		log.Warn().Err(err).Msg("reconcile abandoned")
	case out.done:
		_ = msg.Ack()
	default:
		_ = msg.NakWithDelay(out.requeue)
	}
}

// heartbeat tells JetStream every interval that msg is still being worked
// on (msg.InProgress resets its AckWait) until the returned stop is called.
func heartbeat(msg jetstream.Msg, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

func parseWorkSubject(subject string) (tenant, id string, ok bool) {
	rest, ok := strings.CutPrefix(subject, bus.WorkRoot+".")
	if !ok {
		return "", "", false
	}
	tenant, id, ok = strings.Cut(rest, ".")
	return tenant, id, ok && api.ValidTenant(tenant) && api.ValidID(api.PrefixInstance, id)
}

// target is everything a reconcile of one instance needs.
type target struct {
	inst    api.Instance
	rev     uint64
	key     string
	remote  provider.Remote
	account api.ProviderAccount
	offerID string
	log     zerolog.Logger
}

// reconcile moves one instance one step towards its desired state. A
// returned error means the state store failed (the message is redelivered).
func (r *Reconciler) reconcile(ctx context.Context, log zerolog.Logger, tenant, id string) (outcome, error) {
	t := &target{key: instanceKey(tenant, id), log: log}
	rev, err := bus.GetJSON(ctx, r.st.Instances, t.key, &t.inst)
	if errors.Is(err, bus.ErrNotFound) {
		return finished, nil
	}
	if err != nil {
		return outcome{}, err
	}
	t.rev = rev
	inst := &t.inst
	if wait := r.waitBeforeCall(inst); wait > 0 {
		return after(wait), nil
	}
	if inst.DeletionRequestedAt == nil && inst.Status.Phase == api.PhaseFailed && inst.Status.ObservedGeneration == inst.Generation {
		return finished, nil // terminal until the caller changes the spec
	}
	if held := r.operationLease(inst); held > 0 {
		// Another pass is executing an operation on the machine: leave the
		// machine to it (it may read as absent meanwhile) until it ends.
		return after(min(held, r.o.PollInterval)), nil
	}
	if err := r.resolveTarget(ctx, t); err != nil {
		return r.failed(ctx, t, err)
	}
	if wait := r.budgets.take(t.account.ID, time.Now()); wait > 0 {
		return after(wait), nil
	}
	defer r.budgets.done(t.account.ID)
	if inst.DeletionRequestedAt != nil {
		return r.reconcileDelete(ctx, t)
	}
	return r.reconcileLive(ctx, t)
}

// waitBeforeCall is how long to wait before any provider call: until a rate
// limit's reset always; until a retryable failure's retryAt unless the
// instance is being deleted.
func (r *Reconciler) waitBeforeCall(inst *api.Instance) time.Duration {
	c := providerCondition(inst)
	if c == nil || c.Status != api.ConditionTrue || c.RetryAt == nil {
		return 0
	}
	wait := time.Until(*c.RetryAt)
	if wait <= 0 || (inst.DeletionRequestedAt != nil && c.Reason != string(api.CodeRateLimited)) {
		return 0
	}
	return wait
}

// resolveTarget loads the pool and account behind an instance. A missing
// pool, flavor or account is INVALID_STATE (terminal).
func (r *Reconciler) resolveTarget(ctx context.Context, t *target) error {
	var pool api.Pool
	if _, err := bus.GetJSON(ctx, r.st.Pools, t.inst.TenantID+"."+t.inst.PoolID, &pool); err != nil {
		if errors.Is(err, bus.ErrNotFound) {
			return api.Errorf(api.CodeInvalidState, "pool %s no longer exists", t.inst.PoolID)
		}
		return storeError{err}
	}
	flavor, ok := pool.Flavor(t.inst.Flavor)
	if !ok {
		return api.Errorf(api.CodeInvalidState, "pool %s no longer has flavor %q", pool.ID, t.inst.Flavor)
	}
	var acct api.Account
	if _, err := bus.GetJSON(ctx, r.st.Accounts, t.inst.TenantID+"."+pool.ProviderAccountID, &acct); err != nil {
		if errors.Is(err, bus.ErrNotFound) {
			return api.Errorf(api.CodeInvalidState, "provider account %s no longer exists", pool.ProviderAccountID)
		}
		return storeError{err}
	}
	t.offerID = flavor.OfferID
	t.remote = r.remote(&acct)
	t.remote.IdempotencyKey = t.inst.ID
	t.account = acct.ProviderAccount()
	t.log = t.log.With().Str("account", acct.ID).Str("provider", acct.Provider).Logger()
	return nil
}

// remote calls acct's provider, reporting every reply's rate-limit state
// to the account's budget.
func (r *Reconciler) remote(acct *api.Account) provider.Remote {
	return provider.Remote{NC: r.nc, ID: acct.Provider, Observe: r.budgets.observer(acct.ID)}
}

func (r *Reconciler) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.o.CallTimeout)
}

// ensureMachine creates the machine (idempotently, keyed by the instance
// id) when none is recorded, recording first that a create was requested.
func (r *Reconciler) ensureMachine(ctx context.Context, t *target) (*api.ExternalMachine, error) {
	if m := t.inst.Status.Machine; m != nil {
		return m, nil
	}
	// Every attempt is recorded before it is sent (CreateRequestedAt): a
	// deletion waits for the last one to have ended before it concludes
	// that no machine carries the key (see deleteUnrecorded).
	first := false
	if err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) {
		// Only the write that flips the flag makes this the first attempt
		// (a replica racing us sees it set when its CAS write retries).
		first = !s.CreateRequested
		now := time.Now().UTC()
		s.CreateRequested, s.CreateRequestedAt = true, &now
		if s.Phase == api.PhasePending {
			s.Phase = api.PhaseProvisioning
		}
	}); err != nil {
		return nil, err
	}
	// A reinstall requested before the machine was (re)made is done by
	// creating it with the reinstall's image: only on a first attempt, when
	// no earlier create of the key can answer with a machine of the old one.
	image, reinstall := t.inst.Image, unclaimedReinstall(&t.inst)
	if reinstall != nil && first {
		image = reinstall.Image
	} else {
		reinstall = nil
	}
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	m, err := t.remote.CreateRequest(cctx, api.ProviderCreateRequest{Account: t.account, IdempotencyKey: t.inst.ID, FirstAttempt: first,
		Machine: api.MachineSpec{Name: t.inst.Name, OfferID: t.offerID, Image: image, UserData: t.inst.UserData, SSHKeys: t.inst.SSHKeys}})
	if r.o.Hooks.AfterProviderCreate != nil {
		r.o.Hooks.AfterProviderCreate(t.inst.ID)
	}
	// A refused create leaves CreateRequested set: a refusal proves only
	// that this request made nothing, not that no earlier attempt did (a
	// clone made before a later step was refused, a key lookup that got a
	// 4xx). A deletion deletes by key without creating (deleteUnrecorded).
	if err != nil {
		return nil, err
	}
	t.log.Info().Str("machine", m.ID).Str("state", m.State).Str("image", image).Msg("provider create answered")
	if err := r.writeRecord(ctx, t, func(i *api.Instance) {
		i.Status.Machine, i.Status.Retries, i.Status.Polls = m, 0, 0
		if op := unclaimedReinstall(i); reinstall != nil && op != nil && op.ID == reinstall.ID {
			now := time.Now().UTC()
			i.Image = reinstall.Image
			i.Status.LastOperation = &api.OperationStatus{ID: reinstall.ID, Action: reinstall.Action, State: api.OperationSucceeded,
				Message: "the machine was created with image " + reinstall.Image, StartedAt: now, FinishedAt: &now}
		}
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// reconcileLive converges a live instance: machine exists, power as
// desired, pending operation executed once.
func (r *Reconciler) reconcileLive(ctx context.Context, t *target) (outcome, error) {
	created := t.inst.Status.Machine == nil
	m, err := r.ensureMachine(ctx, t)
	if err != nil {
		return r.failed(ctx, t, err)
	}
	if !created {
		cctx, cancel := r.callCtx(ctx)
		observed, err := t.remote.Get(cctx, t.account, m.ID)
		cancel()
		if err != nil {
			return r.failed(ctx, t, err)
		}
		if observed == nil {
			return r.machineVanished(ctx, t, m)
		}
		if observed.State == api.StateDeleting || observed.State == api.StateDeleted {
			return r.machineGoing(ctx, t, observed)
		}
		m = observed
	}
	if out, done, err := r.runOperation(ctx, t, m); done || err != nil {
		return out, err
	}
	var drift *api.Condition
	action := powerAction(t.inst.Desired.Power, m.State)
	if action == api.ActionOff && r.shuttingDown(&t.inst) {
		action = "" // the guest is stopping by itself: look again later
	}
	if action != "" {
		cctx, cancel := r.callCtx(ctx)
		err := t.remote.Power(cctx, t.account, m.ID, action)
		cancel()
		if err != nil {
			return r.failed(ctx, t, err)
		}
		t.log.Info().Str("machine", m.ID).Str("action", action).Msg("power converged")
		t.inst.Status.Polls = 0 // the machine starts its way from here
		if c := condition(&t.inst, ConditionDrift); t.inst.Status.ObservedGeneration == t.inst.Generation && (c == nil || c.Status != api.ConditionTrue) {
			// It had converged, and nobody asked for a change since: the
			// power state was changed outside the control plane (reported
			// once, not at every look while it starts).
			msg := "machine " + m.ID + " found " + m.State + " outside the control plane; power " + action
			drift = &api.Condition{Type: ConditionDrift, Status: api.ConditionTrue, Reason: "PowerChanged", Message: msg}
			t.log.Warn().Str("machine", m.ID).Str("state", m.State).Msg("power changed out of band; correcting")
			r.publishEvent(&t.inst, "drift", msg)
		}
	}
	return r.observe(ctx, t, m, drift)
}

// shuttingDown reports whether the instance's last operation is a
// graceful-off that succeeded less than GracefulOffTimeout ago: the guest
// was asked to shut down and is given that long before a hard power-off.
func (r *Reconciler) shuttingDown(inst *api.Instance) bool {
	last := inst.Status.LastOperation
	return last != nil && last.Action == api.ActionGracefulOff && last.State == api.OperationSucceeded &&
		last.FinishedAt != nil && time.Since(*last.FinishedAt) < r.o.GracefulOffTimeout
}

// powerAction is the action that brings a machine in state to the desired
// power level, or "" when none is needed (or the machine is in transition).
func powerAction(desired, state string) string {
	switch {
	case desired == api.PowerOn && state == api.StateStopped:
		return api.ActionOn
	case desired == api.PowerOff && state == api.StateRunning:
		return api.ActionOff
	}
	return ""
}

// observe records what the provider reports and decides whether to look
// again. A Drift condition (drift, when not nil) stays True until the
// machine has converged.
func (r *Reconciler) observe(ctx context.Context, t *target, m *api.ExternalMachine, drift *api.Condition) (outcome, error) {
	converged := machineMatches(t.inst.Desired.Power, m.State)
	polls := t.inst.Status.Polls + 1
	err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) {
		s.Machine = m
		s.Phase = phaseOf(s.Phase, m.State)
		s.Retries, s.Polls = 0, polls
		resolve(s, api.ConditionProviderError)
		if drift != nil {
			setCondition(s, *drift)
		}
		if converged {
			s.ObservedGeneration = t.inst.Generation
			s.Polls = 0
			resolve(s, ConditionDrift)
			setReady(s, true, "Converged", "machine "+m.ID+" is "+m.State)
		} else {
			setReady(s, false, "Converging", "machine "+m.ID+" is "+m.State+"; desired power "+t.inst.Desired.Power)
		}
	})
	if err != nil {
		return outcome{}, err
	}
	if converged {
		return finished, nil
	}
	return after(r.pollDelay(polls)), nil
}

// maxPollDelay caps the wait between two looks at a converging machine.
const maxPollDelay = 30 * time.Second

// pollDelay is the wait before looking again at a machine that look
// number polls (status.Polls) found still converging: PollInterval after the
// first look since the reconciler acted on it or a call failed, doubling
// with every further look (a server that boots in 10 s is not polled every
// 2 s), at most maxPollDelay. It follows the machine, not the retries
// before: a pass's work message may have been delivered many times.
func (r *Reconciler) pollDelay(polls int) time.Duration {
	d := r.o.PollInterval
	for i := 1; i < polls && d < maxPollDelay; i++ {
		d *= 2
	}
	return min(d, max(maxPollDelay, r.o.PollInterval))
}

// machineVanished handles a machine deleted out of band: it is forgotten
// and created again with the same key on the next pass (drift repair). No
// create of the key is outstanding (the key's machine was found, and is
// gone), so the next one is a first attempt.
func (r *Reconciler) machineVanished(ctx context.Context, t *target, m *api.ExternalMachine) (outcome, error) {
	t.log.Warn().Str("machine", m.ID).Msg("machine disappeared out of band; recreating")
	err := r.reportMissing(ctx, t, "machine "+m.ID+" was deleted outside the control plane; recreating", func(s *api.InstanceStatus) {
		s.Machine = nil
		s.CreateRequested = false
	})
	return after(0), err
}

// machineGoing handles a machine being deleted out of band (nobody asked
// for the instance's deletion): its machine is watched until it is gone
// (machineVanished then re-creates it; the key and name are the old
// machine's until then).
func (r *Reconciler) machineGoing(ctx context.Context, t *target, m *api.ExternalMachine) (outcome, error) {
	polls := t.inst.Status.Polls + 1
	err := r.reportMissing(ctx, t, "machine "+m.ID+" is being deleted outside the control plane; recreated once it is gone", func(s *api.InstanceStatus) {
		s.Machine = m
		s.Retries, s.Polls = 0, polls
	})
	return after(r.pollDelay(polls)), err
}

// reasonMachineMissing is the Drift reason of a machine deleted (or being
// deleted) outside the control plane.
const reasonMachineMissing = "MachineMissing"

// reportMissing records, with change, that the instance's machine is gone
// or going out of band: phase Provisioning (it is re-created), Drift and
// Ready saying so (msg). The drift event is published once, when the
// Drift condition did not say so yet.
func (r *Reconciler) reportMissing(ctx context.Context, t *target, msg string, change func(*api.InstanceStatus)) error {
	reported := machineMissing(&t.inst)
	err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) {
		change(s)
		s.Phase = api.PhaseProvisioning
		setCondition(s, api.Condition{Type: ConditionDrift, Status: api.ConditionTrue, Reason: reasonMachineMissing, Message: msg})
		setReady(s, false, reasonMachineMissing, msg)
	})
	if err == nil && !reported {
		r.publishEvent(&t.inst, "drift", msg)
	}
	return err
}

// machineMissing reports whether the instance's machine was found deleted
// out of band and not re-created yet (Drift True, MachineMissing).
func machineMissing(inst *api.Instance) bool {
	c := condition(inst, ConditionDrift)
	return c != nil && c.Status == api.ConditionTrue && c.Reason == reasonMachineMissing
}

// reconcileDelete deletes the machine (treating absence as done), waits
// until the provider no longer reports it, then, when a create was
// requested or the machine was found missing, deletes any machine of the
// key the record does not show (deleteUnrecorded), then deletes the
// record. machineVanished clears CreateRequested for the re-create, but a
// half-made machine of the key may remain then (a Proxmox reinstall's
// untagged clone, which get does not show).
func (r *Reconciler) reconcileDelete(ctx context.Context, t *target) (outcome, error) {
	if m := t.inst.Status.Machine; m != nil {
		cctx, cancel := r.callCtx(ctx)
		observed, err := t.remote.Get(cctx, t.account, m.ID)
		cancel()
		if err != nil {
			return r.failed(ctx, t, err)
		}
		if observed != nil {
			polls := t.inst.Status.Polls + 1
			if observed.State != api.StateDeleting {
				cctx, cancel := r.callCtx(ctx)
				err := t.remote.Delete(cctx, t.account, m.ID)
				cancel()
				if err != nil && !api.IsCode(err, api.CodeNotFound) {
					return r.failed(ctx, t, err)
				}
				t.log.Info().Str("machine", m.ID).Msg("machine delete requested")
				polls = 1
			}
			if err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) { s.Retries, s.Polls = 0, polls }); err != nil {
				return outcome{}, err
			}
			return after(r.pollDelay(polls)), nil
		}
	}
	if t.inst.Status.CreateRequested || machineMissing(&t.inst) {
		if out, done, err := r.deleteUnrecorded(ctx, t); !done {
			return out, err
		}
	}
	if err := bus.DeleteKey(ctx, r.st.Instances, t.key, t.rev); err != nil {
		if api.IsCode(err, api.CodeConflict) {
			return after(0), nil
		}
		return outcome{}, err
	}
	t.log.Info().Msg("instance deleted")
	r.publishEvent(&t.inst, "deleted", "")
	return finished, nil
}

// createRefused reports whether a create failed because the provider
// refused it (api.ComputeError.Refused: bad input or config, a name held
// by another key, no room for a machine — Proxmox: every VMID slot of the
// key holds another key's VM, so none holds this key's —, an API 4xx
// other than timeout and rate limit): nothing was created.
func createRefused(err error) bool {
	return api.AsComputeError(err).Refused()
}

// permanentRefusal reports whether the same request can never pass
// (api.ComputeError.Permanent: a Terminal code, or a refusal the provider
// marked details.permanent, e.g. Hetzner's 422 for an unknown image or
// 409 uniqueness_error for a name another key holds). The instance then
// fails like on a terminal code, with the provider's message.
func permanentRefusal(ce *api.ComputeError) bool {
	return ce.Permanent()
}

// failed records a provider or lookup failure: terminal codes and
// permanent refusals fail the instance for this generation, others are
// retried with backoff.
func (r *Reconciler) failed(ctx context.Context, t *target, err error) (outcome, error) {
	if isStoreError(err) {
		return outcome{}, err
	}
	ce := api.AsComputeError(err)
	now := time.Now().UTC()
	if ce.Code.Terminal() || permanentRefusal(ce) && !r.nameBeingFreed(ctx, t, ce) {
		t.log.Warn().Str("code", string(ce.Code)).Str("error", ce.Message).Msg("instance failed")
		if err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) {
			s.Phase = api.PhaseFailed
			s.ObservedGeneration = t.inst.Generation
			setCondition(s, api.Condition{Type: api.ConditionProviderError, Status: api.ConditionTrue, Reason: string(ce.Code), Message: ce.Message})
			setReady(s, false, string(ce.Code), ce.Message)
		}); err != nil {
			return outcome{}, err
		}
		return finished, nil
	}
	var delay time.Duration
	if err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) {
		// Counted inside the CAS write: a pass that overlaps another (or a
		// retried write) never loses an increment, so backoff keeps growing.
		// The next look that succeeds starts the poll delay afresh.
		s.Retries++
		s.Polls = 0
		delay = r.o.Retry.Delay(s.Retries, ce.RetryAfter())
		retryAt := now.Add(delay)
		setCondition(s, api.Condition{Type: api.ConditionProviderError, Status: api.ConditionTrue, Reason: string(ce.Code), Message: ce.Message, RetryAt: &retryAt})
		setReady(s, false, string(ce.Code), ce.Message)
	}); err != nil {
		return outcome{}, err
	}
	t.log.Warn().Str("code", string(ce.Code)).Str("error", ce.Message).Int("retries", t.inst.Status.Retries).Int64("retry_in_ms", delay.Milliseconds()).Msg("reconcile failed; will retry")
	return after(delay), nil
}
