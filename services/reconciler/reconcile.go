package reconciler

import (
	"context"
	"strconv"
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
// is then redelivered after AckWait (pull keeps a held message's AckWait
// from running out meanwhile). A pass cancelled by Stop hands its
// work back at once.
func (r *Reconciler) handle(ctx context.Context, msg jetstream.Msg) {
	tenant, _, id, ok := parseWorkSubject(msg.Subject())
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

// parseWorkSubject splits a work subject, bus.AccountWork's or (queued
// before it) bus.Work's, account "" then.
func parseWorkSubject(subject string) (tenant, account, id string, ok bool) {
	rest, ok := strings.CutPrefix(subject, bus.WorkRoot+".")
	if !ok {
		return "", "", "", false
	}
	tokens := strings.Split(rest, ".")
	switch len(tokens) {
	case 2:
		tenant, id = tokens[0], tokens[1]
	case 3:
		tenant, account, id = tokens[0], tokens[1], tokens[2]
		if !api.ValidID(api.PrefixAccount, account) {
			return "", "", "", false
		}
	default:
		return "", "", "", false
	}
	return tenant, account, id, api.ValidTenant(tenant) && api.ValidID(api.PrefixInstance, id)
}

// reconcile moves one instance one step towards its desired state: it
// loads the record, waits where a wait is due, resolves the instance's
// pool and account, and runs the delete phases or the live phases (see
// phases.go). A returned error means the state store failed (the message
// is redelivered). Every pass is counted and timed (observePass).
func (r *Reconciler) reconcile(ctx context.Context, log zerolog.Logger, tenant, id string) (out outcome, err error) {
	defer observePass(ctx, time.Now(), &out, &err)
	if r.o.Hooks.BeforePass != nil {
		r.o.Hooks.BeforePass(id)
	}
	s := &scope{log: log}
	s.inst, s.rev, err = r.instances.Get(ctx, tenant, id)
	if api.IsCode(err, api.CodeNotFound) {
		return finished, nil
	}
	if err != nil {
		return outcome{}, err
	}
	inst := &s.inst
	if wait := r.waitBeforeCall(inst); wait > 0 {
		return after(wait), nil
	}
	if inst.DeletionRequestedAt == nil && settledFailure(inst) {
		return finished, nil // terminal until the caller changes the spec
	}
	if held := max(r.operationLease(inst), r.resizeLease(inst)); held > 0 {
		// Another pass is executing an operation on the machine: leave the
		// machine to it (it may read as absent meanwhile) until it ends.
		return after(min(held, r.o.PollInterval)), nil
	}
	if err := r.resolveTarget(ctx, s); err != nil {
		return r.failed(ctx, s, err)
	}
	if wait := r.budgets.take(s.account.ID, r.o.Clock.Now()); wait > 0 {
		observePacing(s.remote.ID, wait)
		return after(wait), nil
	}
	defer r.budgets.done(s.account.ID)
	if inst.DeletionRequestedAt != nil {
		return r.run(ctx, s, r.deletePhases())
	}
	return r.run(ctx, s, r.livePhases())
}

// waitBeforeCall is how long to wait before any provider call: until a rate
// limit's reset always; until a retryable failure's retryAt unless the
// instance is being deleted.
func (r *Reconciler) waitBeforeCall(inst *api.Instance) time.Duration {
	c := providerCondition(inst)
	if c == nil || c.Status != api.ConditionTrue || c.RetryAt == nil {
		return 0
	}
	wait := c.RetryAt.Sub(r.o.Clock.Now())
	if wait <= 0 || (inst.DeletionRequestedAt != nil && c.Reason != api.ReasonOf(api.CodeRateLimited)) {
		return 0
	}
	return wait
}

// resolveTarget loads the pool and account behind an instance. A missing
// pool, flavor or account is INVALID_STATE (terminal).
func (r *Reconciler) resolveTarget(ctx context.Context, t *scope) error {
	pool, _, err := r.pools.Get(ctx, t.inst.TenantID, t.inst.PoolID)
	if err != nil {
		if api.IsCode(err, api.CodeNotFound) {
			return api.Errorf(api.CodeInvalidState, "pool %s no longer exists", t.inst.PoolID)
		}
		return storeError{err}
	}
	flavor, ok := pool.Flavor(t.inst.Flavor)
	if !ok {
		return api.Errorf(api.CodeInvalidState, "pool %s no longer has flavor %q", pool.ID, t.inst.Flavor)
	}
	acct, _, err := r.accounts.Get(ctx, t.inst.TenantID, pool.ProviderAccountID)
	if err != nil {
		if api.IsCode(err, api.CodeNotFound) {
			return api.Errorf(api.CodeInvalidState, "provider account %s no longer exists", pool.ProviderAccountID)
		}
		return storeError{err}
	}
	t.offerID, t.flavors = flavor.OfferID, pool.Flavors
	if b := t.inst.Bootstrap; b != nil {
		t.offerID = strconv.Itoa(b.ServerNumber) // a host's create claims the server (offers: one per free server)
	}
	t.access = pool.Access
	t.pool, t.flavor = &pool, flavor
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
