package reconciler

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Quotas of instances (api.TenantQuotas, from the tenant record; see
// bus.Quotas for how a replica learns them).
//
// Counts: each tenant with an instance quota (quotas.instances or
// quotas.instancesPerPool) has one usage record in compute_usage
// (<tenant>.instances): its instances and its instances per pool. A create
// reserves its place with a compare-and-set of that record before it
// writes the instance (reserveInstance), so of two creates at the limit
// only one gets the place, whichever replica serves them; the other is
// refused CAPACITY_UNAVAILABLE naming the quota and writes nothing. A
// create that fails after its reservation gives the place back; deleting
// an instance's record gives its place back (releaseInstance). Nothing
// scans the inventory per create: a replica keeps each tenant's record and
// revision from its last write and tries the next write at that revision
// (one round trip; a stale one is read afresh), and one lock per tenant
// and replica keeps its own creates from racing each other. The record is
// made from a count of the tenant's instances by the first create under a
// quota.
//
// Repair: a crash between the reservation and the instance's write (or
// between a record's deletion and its release) leaves the count one too
// high. Every resync counts the inventory anyway (Resync reads every
// record); a usage record that disagrees with the count, unchanged (the
// same revision), on two resyncs in a row is set to the count, at that
// revision: a create or delete in flight changes the record within one
// resync interval, so a record unchanged since the last resync has no
// reservation in flight. A quota added later to a tenant that had
// instances without counts is repaired the same way.
//
// Creates per second (quotas.createsPerSecond) is a token bucket per tenant
// and replica (burst: one second's creates): a create beyond it is refused
// RATE_LIMITED with the wait in details.retryAfterMs. With n replicas a
// tenant may create up to n times its rate; a replica's own work is what
// the bucket protects.

// usageID is the id of a tenant's usage record (RecordKey(tenant, usageID)).
const usageID = "instances"

// usageRecord is a tenant's counts in compute_usage.
type usageRecord struct {
	// Instances of the tenant with a record in compute_instances.
	Instances int64 `json:"instances"`
	// Pools counts them by pool id (pools without instances left out).
	Pools map[string]int64 `json:"pools,omitempty"`
}

func (u *usageRecord) equal(o *usageRecord) bool {
	return u.Instances == o.Instances && maps.Equal(u.Pools, o.Pools)
}

// add adds n (1 or -1) instances of pool.
func (u *usageRecord) add(pool string, n int64) {
	u.Instances = max(u.Instances+n, 0)
	u.Pools = maps.Clone(u.Pools)
	if u.Pools == nil {
		u.Pools = map[string]int64{}
	}
	if u.Pools[pool] += n; u.Pools[pool] <= 0 {
		delete(u.Pools, pool)
	}
}

// usage is a replica's side of the usage records and create rates.
type usage struct {
	table *bus.Table[usageRecord]
	mu    sync.Mutex
	of    map[string]*tenantUsage
	// suspect holds, per tenant, the revision of a usage record the last
	// resync found disagreeing with its count (repair).
	suspect map[string]uint64
}

// tenantUsage is one tenant's lock, last written record and create rate.
type tenantUsage struct {
	mu    sync.Mutex
	known bool // rec and rev are the record as this replica last wrote or read it
	rec   usageRecord
	rev   uint64
	rate  *rate.Limiter
	// turn is the latest retry time a refused create was given
	// (admitCreate).
	turn time.Time
}

func newUsage(st *bus.Stores) *usage {
	return &usage{table: bus.NewTable[usageRecord](st.Usage, "usage record"), of: map[string]*tenantUsage{}, suspect: map[string]uint64{}}
}

func (u *usage) tenant(t string) *tenantUsage {
	u.mu.Lock()
	defer u.mu.Unlock()
	tu := u.of[t]
	if tu == nil {
		tu = &tenantUsage{}
		u.of[t] = tu
	}
	return tu
}

// admitCreate takes one of the tenant's creates of this second
// (quotas.createsPerSecond; none: always). Errors: RATE_LIMITED naming
// the quota, with the caller's turn in retryAfterMs (bus.TakeTurn: the
// callers refused together come back one token apart).
func (r *Reconciler) admitCreate(tenant string, now time.Time) error {
	perSecond := r.o.Quotas.Of(tenant).CreatesPerSecond
	if perSecond <= 0 {
		return nil
	}
	tu := r.usage.tenant(tenant)
	tu.mu.Lock()
	tu.rate = bus.PerSecondLimiter(tu.rate, perSecond)
	turn, ok := bus.TakeTurn(tu.rate, perSecond, now, tu.turn)
	if !ok {
		tu.turn = turn
	}
	tu.mu.Unlock()
	if !ok {
		return api.RateLimited(turn.Sub(now), "tenant %s creates at most %d instances per second (%s)",
			tenant, perSecond, bus.LimitCreatesPerSecond).WithLimit(bus.LimitCreatesPerSecond, perSecond)
	}
	return nil
}

// reserveInstance counts one more instance of pool for the tenant in its
// usage record, refusing when that would pass its quotas.instances or
// quotas.instancesPerPool; a tenant with neither has no record to keep and
// is never refused. undo gives the place back (call it when the instance
// is not written after all). Errors: CAPACITY_UNAVAILABLE naming the quota
// (details.limit, details.quota), CONFLICT (the record kept changing),
// UNAVAILABLE.
func (r *Reconciler) reserveInstance(ctx context.Context, tenant, pool string) (undo func(), err error) {
	q := r.o.Quotas.Of(tenant)
	if q.Instances <= 0 && q.InstancesPerPool <= 0 {
		return func() {}, nil
	}
	tu := r.usage.tenant(tenant)
	tu.mu.Lock()
	defer tu.mu.Unlock()
	if !tu.known {
		if err := r.loadUsage(ctx, tenant, tu); err != nil {
			return nil, err
		}
	}
	rec, rev, err := r.usage.table.MutateAt(ctx, tenant, usageID, tu.rec, tu.rev, func(u *usageRecord) error {
		switch {
		case q.Instances > 0 && u.Instances >= q.Instances:
			return api.QuotaExceeded(bus.LimitInstances, q.Instances, "tenant %s has %d instances, its quota (%s)",
				tenant, u.Instances, bus.LimitInstances)
		case q.InstancesPerPool > 0 && u.Pools[pool] >= q.InstancesPerPool:
			return api.QuotaExceeded(bus.LimitInstancesPerPool, q.InstancesPerPool, "pool %s has %d instances, the tenant's quota per pool (%s)",
				pool, u.Pools[pool], bus.LimitInstancesPerPool).WithPath("poolId")
		}
		u.add(pool, 1)
		return nil
	})
	tu.known, tu.rec, tu.rev = err == nil || api.IsCode(err, api.CodeCapacityUnavailable), rec, rev
	if err != nil {
		return nil, err
	}
	return func() { r.releaseInstance(context.WithoutCancel(ctx), tenant, pool) }, nil
}

// loadUsage reads the tenant's usage record into tu, making it from a
// count of the tenant's instances when there is none (the first create
// under a quota). Errors: UNAVAILABLE, INTERNAL.
func (r *Reconciler) loadUsage(ctx context.Context, tenant string, tu *tenantUsage) error {
	for range bus.CASAttempts {
		rec, rev, err := r.usage.table.Get(ctx, tenant, usageID)
		if err == nil {
			tu.known, tu.rec, tu.rev = true, rec, rev
			return nil
		}
		if !api.IsCode(err, api.CodeNotFound) {
			return err
		}
		var count usageRecord
		if err := r.instances.Each(ctx, tenant, func(_, _ string, inst api.Instance, _ uint64) error {
			count.add(inst.PoolID, 1)
			return nil
		}); err != nil {
			return err
		}
		rev, err = r.usage.table.Create(ctx, tenant, usageID, count)
		if err == nil {
			tu.known, tu.rec, tu.rev = true, count, rev
			return nil
		}
		if !api.IsCode(err, api.CodeAlreadyExists) {
			return err
		}
	}
	return api.Errorf(api.CodeUnavailable, "usage record of tenant %s keeps being made and removed; retry", tenant)
}

// releaseInstance counts one instance of pool out of the tenant's usage
// record, if it has one. A failure is logged: the resync repairs the count
// (see the top of this file).
func (r *Reconciler) releaseInstance(ctx context.Context, tenant, pool string) {
	tu := r.usage.tenant(tenant)
	tu.mu.Lock()
	defer tu.mu.Unlock()
	if !tu.known {
		rec, rev, err := r.usage.table.Get(ctx, tenant, usageID)
		if api.IsCode(err, api.CodeNotFound) {
			return // no quota: no count
		}
		if err != nil {
			r.log.Warn().Err(err).Str("tenant", tenant).Msg("usage record not read; the resync repairs its count")
			return
		}
		tu.known, tu.rec, tu.rev = true, rec, rev
	}
	rec, rev, err := r.usage.table.MutateAt(ctx, tenant, usageID, tu.rec, tu.rev, func(u *usageRecord) error {
		u.add(pool, -1)
		return nil
	})
	tu.known, tu.rec, tu.rev = err == nil, rec, rev
	if err != nil && !api.IsCode(err, api.CodeNotFound) {
		r.log.Warn().Err(err).Str("tenant", tenant).Msg("usage record not decremented; the resync repairs its count")
	}
}

// usageCount is the resync's count of the inventory, by tenant.
type usageCount map[string]*usageRecord

func (c usageCount) add(inst *api.Instance) {
	u := c[inst.TenantID]
	if u == nil {
		u = &usageRecord{}
		c[inst.TenantID] = u
	}
	u.Instances++
	if u.Pools == nil {
		u.Pools = map[string]int64{}
	}
	u.Pools[inst.PoolID]++
}

// errUsageChanged ends a repair whose record changed since it was read.
var errUsageChanged = errors.New("usage record changed")

// repairUsage sets every usage record that disagreed with the count at the
// same revision on the previous resync too to count (see the top of this
// file). Errors: UNAVAILABLE (the usage records could not be listed).
func (r *Reconciler) repairUsage(ctx context.Context, count usageCount) error {
	keys, err := r.usage.table.Keys(ctx, "")
	if err != nil {
		return err
	}
	for _, key := range keys {
		tenant, _, _ := bus.SplitKey(key)
		r.repairTenantUsage(ctx, tenant, count[tenant])
	}
	return nil
}

func (r *Reconciler) repairTenantUsage(ctx context.Context, tenant string, counted *usageRecord) {
	if counted == nil {
		counted = &usageRecord{}
	}
	tu := r.usage.tenant(tenant)
	tu.mu.Lock()
	defer tu.mu.Unlock()
	rec, rev, err := r.usage.table.Get(ctx, tenant, usageID)
	if err != nil {
		return
	}
	r.usage.mu.Lock()
	suspect, seen := r.usage.suspect[tenant]
	delete(r.usage.suspect, tenant)
	if !rec.equal(counted) && !(seen && suspect == rev) {
		r.usage.suspect[tenant] = rev // the next resync decides
	}
	r.usage.mu.Unlock()
	if rec.equal(counted) || !seen || suspect != rev {
		return
	}
	read := rec
	fixed, newRev, err := r.usage.table.MutateAt(ctx, tenant, usageID, rec, rev, func(u *usageRecord) error {
		if !u.equal(&read) {
			return errUsageChanged // a create or delete got in: the next resyncs look again
		}
		*u = *counted
		return nil
	})
	tu.known, tu.rec, tu.rev = err == nil, fixed, newRev
	if err == nil {
		r.log.Info().Str("tenant", tenant).Int64("was", read.Instances).Int64("now", counted.Instances).
			Msg("usage record repaired from the inventory's count")
	}
}
