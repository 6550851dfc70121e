package reconciler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// startupResyncDelay bounds the wait before a replica's first resync
// (uniformly random below it, so replicas started together spread out).
const startupResyncDelay = 10 * time.Second

// resyncLoop resyncs soon after start (machines may have changed while no
// replica ran: a restarted emulator, a provider outage), then every
// ResyncInterval (±20 % jitter).
func (r *Reconciler) resyncLoop(ctx context.Context) {
	defer r.wg.Done()
	wait := time.Duration(rand.Int64N(int64(min(startupResyncDelay, r.o.ResyncInterval))))
	for r.waitFor(ctx, time.After(wait)) {
		wait = r.o.ResyncInterval + time.Duration((rand.Float64()*0.4-0.2)*float64(r.o.ResyncInterval))
		start := time.Now()
		n, err := r.Resync(ctx)
		observeResync(start, err)
		if err != nil {
			r.log.Warn().Err(err).Msg("resync incomplete")
		} else {
			r.log.Info().Int("queued", n).Msg("resync done")
		}
	}
}

// waitFor waits for c; false when ctx ends or the reconciler stops first.
func (r *Reconciler) waitFor(ctx context.Context, c <-chan time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-r.stopping.Done():
		return false
	case <-c:
		return true
	}
}

// reconnectPoll is how often queueUnsettledOnReconnect reads the
// connection's reconnect count; reconnectQueueGap is the least time
// between two of its walks (a flapping connection walks once per gap, not
// per reconnect).
const (
	reconnectPoll     = time.Second
	reconnectQueueGap = 10 * time.Second
)

// queueUnsettledOnReconnect queues every instance that is not settled
// after the connection to NATS comes back, while the work stream is
// flushed asynchronously (bus.Stores.WorkFlushedAsync: a single server): a
// server that crashed may have lost the last work messages it
// acknowledged, and their instances, recorded, would otherwise wait for
// the next periodic resync (up to ResyncInterval). A work message is only
// ever queued for an instance that is not settled (a change of its spec,
// a pass to come), so that is all it queues: it reads the instances (the
// index's walk) and sends the provider nothing. It runs whatever
// ResyncInterval says: the periodic resync catches drift, this the
// server's loss.
func (r *Reconciler) queueUnsettledOnReconnect(ctx context.Context) {
	defer r.wg.Done()
	seen := r.nc.Stats().Reconnects
	var last time.Time
	tick := time.NewTicker(reconnectPoll)
	defer tick.Stop()
	for r.waitFor(ctx, tick.C) {
		reconnects := r.nc.Stats().Reconnects
		if reconnects == seen || !r.nc.IsConnected() || time.Since(last) < reconnectQueueGap {
			continue
		}
		seen, last = reconnects, time.Now()
		n, err := r.resync(ctx, fmt.Sprintf("reconnect-%d", last.UnixNano()), false)
		if err != nil {
			r.log.Warn().Err(err).Msg("queueing the unsettled instances after reconnecting incomplete")
		} else {
			r.log.Info().Int("queued", n).Msg("unsettled instances queued after reconnecting (the server may have lost work it acknowledged)")
		}
	}
}

// resyncPageSize is the page size of the provider lists a resync reads.
const resyncPageSize = provider.MaxListLimit

// Resync looks at every instance and queues work for each one that may need
// it, returning how many it queued. An instance that is settled (converged
// for its generation, nothing pending, no failure) is checked against its
// provider account's machine list instead of being queued: it is queued only
// when its machine is missing from the list, carries another key, or is in
// another power state than desired. One list page covers up to
// resyncPageSize machines, so on Hetzner a resync of 1,000 settled
// instances costs about 20 API requests instead of 1,000 gets. Accounts
// whose provider cannot list (UNSUPPORTED) or whose list fails have all
// their instances queued. Replicas resyncing in the same ResyncInterval
// are deduplicated by message id. An account whose rate-limit window is
// closed (or whose list is answered RATE_LIMITED) is left to the next
// resync: nothing is sent to it before its reset, not a list and not a get
// per instance. The instances are those of the replica's instance index
// (every one written before the resync started), read from the bucket in
// parallel batches (bus.Index.Each). Errors: UNAVAILABLE (state store).
func (r *Reconciler) Resync(ctx context.Context) (int, error) {
	// Tagged by the ResyncInterval window: replicas resyncing in one
	// window queue an instance once. With the periodic resync off (tests)
	// every call queues anew.
	window := time.Now().UnixNano() / int64(max(r.o.ResyncInterval, 1))
	return r.resync(ctx, fmt.Sprintf("resync-%d", window), true)
}

// resync is Resync, its work messages' ids "<instance id>-<tag>"; with
// lookAtSettled false it queues the instances that are not settled and
// nothing else: no provider list, no usage repair
// (queueUnsettledOnReconnect).
func (r *Reconciler) resync(ctx context.Context, tag string, lookAtSettled bool) (int, error) {
	queued := 0
	queue := func(tenant, pool, id string) {
		pctx, cancel := context.WithTimeout(ctx, enqueueTimeout)
		defer cancel()
		r.publishWork(pctx, &api.Instance{TenantID: tenant, PoolID: pool, ID: id}, id+"-"+tag)
		queued++
	}
	byAccount := map[string][]settledInstance{} // settled instances by "<tenant>.<account id>"
	accounts := &accountCache{byPool: map[string]*api.Account{}, byAccount: map[string]*api.Account{}}
	count := usageCount{} // for repairUsage
	err := r.index.Each(ctx, func(_, _ string, inst api.Instance) error {
		count.add(&inst)
		if !settled(&inst) {
			queue(inst.TenantID, inst.PoolID, inst.ID)
			return nil
		}
		if !lookAtSettled {
			return nil
		}
		acct, err := r.accountOf(ctx, &inst, accounts)
		if err != nil {
			queue(inst.TenantID, inst.PoolID, inst.ID) // its reconcile records what is missing
			return nil
		}
		key := bus.RecordKey(acct.TenantID, acct.ID)
		byAccount[key] = append(byAccount[key], settledOf(&inst))
		return nil
	})
	if err != nil || !lookAtSettled {
		return queued, err
	}
	if err := r.repairUsage(ctx, count); err != nil {
		r.log.Warn().Err(err).Msg("usage records not checked against the inventory")
	}
	for key, insts := range byAccount {
		acct := accounts.byAccount[key]
		machines, err := r.listMachines(ctx, acct)
		if api.IsCode(err, api.CodeRateLimited) {
			// A get per instance would spend a budget the list found spent.
			r.log.Info().Err(err).Str("tenant", acct.TenantID).Str("account", acct.ID).Int("instances", len(insts)).
				Msg("resync cannot list the account's machines before its rate limit resets; the next resync looks")
			continue
		}
		if err != nil {
			r.log.Info().Err(err).Str("tenant", acct.TenantID).Str("account", acct.ID).
				Msg("resync cannot list the account's machines; queueing its instances")
		}
		for _, inst := range insts {
			if machines == nil || !listedAsDesired(inst, machines) {
				queue(inst.tenant, inst.pool, inst.id)
			}
		}
	}
	return queued, nil
}

// settled reports whether an instance needs no work unless its machine
// changed: converged for its generation, its machine running or stopped, not being
// deleted, no operation pending and no provider failure outstanding (a
// failed operation's ProviderError is its outcome, not work to do).
func settled(inst *api.Instance) bool {
	s := &inst.Status
	if inst.DeletionRequestedAt != nil || s.Machine == nil || s.ObservedGeneration != inst.Generation {
		return false
	}
	if p := phaseTable[s.Machine.State]; p != api.PhaseRunning && p != api.PhaseStopped {
		return false
	}
	if op := inst.Desired.Operation; op != nil &&
		(s.LastOperation == nil || s.LastOperation.ID != op.ID || s.LastOperation.State == api.OperationExecuting) {
		return false
	}
	for i := range s.Conditions {
		if c := &s.Conditions[i]; c.Problem() && !operationFailure(s, c) {
			return false
		}
	}
	return true
}

// settledInstance is what a resync keeps of a settled instance until its
// account's machine list is read: what listedAsDesired compares and what
// queueing it takes, not the record (at 100,000 instances the records
// would hold hundreds of MB; docs/benchmarks.md).
type settledInstance struct {
	tenant, pool, id, machineID string
	power                       api.Power
}

func settledOf(inst *api.Instance) settledInstance {
	return settledInstance{tenant: inst.TenantID, pool: inst.PoolID, id: inst.ID, machineID: inst.Status.Machine.ID,
		power: inst.Desired.Power}
}

// listedMachine is what a resync keeps of a listed machine.
type listedMachine struct {
	key   string
	state api.MachineState
}

// listedAsDesired reports whether the account's machine list (by id) holds
// the instance's machine, carrying its key and in its desired power state.
func listedAsDesired(inst settledInstance, machines map[string]listedMachine) bool {
	m, ok := machines[inst.machineID]
	return ok && (m.key == "" || m.key == inst.id) && machineMatches(inst.power, m.state)
}

// accountCache holds the provider accounts a resync looked up, by pool
// ("<tenant>.<pool id>") and by account ("<tenant>.<account id>").
type accountCache struct {
	byPool, byAccount map[string]*api.Account
}

// accountOf returns the provider account behind an instance's pool.
// Errors: NOT_FOUND (pool or account gone), UNAVAILABLE, INTERNAL.
func (r *Reconciler) accountOf(ctx context.Context, inst *api.Instance, cache *accountCache) (*api.Account, error) {
	poolKey := bus.RecordKey(inst.TenantID, inst.PoolID)
	if a, ok := cache.byPool[poolKey]; ok {
		return a, nil
	}
	pool, _, err := r.pools.Get(ctx, inst.TenantID, inst.PoolID)
	if err != nil {
		return nil, err
	}
	acctKey := bus.RecordKey(inst.TenantID, pool.ProviderAccountID)
	acct, ok := cache.byAccount[acctKey]
	if !ok {
		a, _, err := r.accounts.Get(ctx, inst.TenantID, pool.ProviderAccountID)
		if err != nil {
			return nil, err
		}
		acct = &a
		cache.byAccount[acctKey] = acct
	}
	cache.byPool[poolKey] = acct
	return acct, nil
}

// listMachines reads every page of an account's machine list (the key
// and state of each machine, by id), paced by the
// account's budget like any other call; it sends nothing while the
// account's rate-limit window is closed. Errors: RATE_LIMITED (the window
// is closed, or the provider answered so), the provider's others (e.g.
// UNSUPPORTED for a provider without the list capability), or ctx's.
func (r *Reconciler) listMachines(ctx context.Context, acct *api.Account) (map[string]listedMachine, error) {
	remote, account := r.remote(acct), acct.ProviderAccount()
	machines := map[string]listedMachine{}
	cursor := ""
	for {
		if reset, closed := r.budgets.closedUntil(acct.ID, r.o.Clock.Now()); closed {
			wait := reset.Sub(r.o.Clock.Now())
			return nil, api.RateLimited(wait, "the account's rate-limit budget is spent until %s", reset.UTC().Format(time.RFC3339))
		}
		for wait := r.budgets.take(acct.ID, r.o.Clock.Now()); wait > 0; wait = r.budgets.take(acct.ID, r.o.Clock.Now()) {
			observePacing(acct.Provider, wait)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
		}
		cctx, cancel := r.callCtx(ctx)
		page, err := remote.List(cctx, account, cursor, resyncPageSize)
		cancel()
		r.budgets.done(acct.ID)
		if err != nil {
			return nil, err
		}
		for _, m := range page.Items {
			machines[m.ID] = listedMachine{key: m.IdempotencyKey, state: m.State}
		}
		if page.NextCursor == "" {
			return machines, nil
		}
		cursor = page.NextCursor
	}
}
