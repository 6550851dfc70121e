package reconciler

import (
	"context"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// poolCache holds the pools creates read, for a create's first read of its
// pool (flavors, default images): a pool has no update verb, and the one
// thing that changes on it, its deletion mark, a create reads again from
// the store after writing the instance (recheckPool), so a cached pool
// never lets an instance into a pool being deleted. Entries live
// poolCacheTTL; a replica holds at most poolCacheMax.
type poolCache struct {
	mu    sync.Mutex
	pools map[string]cachedPool // by RecordKey(tenant, pool id)
	// accounts are the pools' provider accounts (which never change), by
	// RecordKey(tenant, pool id), for the work subjects (accountOfPool).
	accounts map[string]string
}

type cachedPool struct {
	pool api.Pool
	read time.Time
}

const (
	poolCacheTTL = 10 * time.Second
	poolCacheMax = 10_000
)

// pool is tenant's pool id, from the cache or the store. Errors: those of
// the pools table's Get (NOT_FOUND, UNAVAILABLE).
func (r *Reconciler) pool(ctx context.Context, tenant, id string) (api.Pool, error) {
	key, now := bus.RecordKey(tenant, id), time.Now()
	c := &r.poolCache
	c.mu.Lock()
	e, ok := c.pools[key]
	c.mu.Unlock()
	if ok && now.Sub(e.read) < poolCacheTTL {
		return e.pool, nil
	}
	pool, _, err := r.pools.Get(ctx, tenant, id)
	if err != nil || pool.DeletionRequestedAt != nil {
		return pool, err
	}
	c.mu.Lock()
	if c.pools == nil || len(c.pools) >= poolCacheMax {
		c.pools = map[string]cachedPool{}
	}
	c.pools[key] = cachedPool{pool: pool, read: now}
	c.mu.Unlock()
	return pool, nil
}

// accountOfPool is the provider account of tenant's pool (it never
// changes: kept once read, poolCacheMax pools at most), "" when the pool
// cannot be read (gone, or the store unreachable): the instance's work is
// then queued without an account (bus.Work) and still consumed. So is
// the work of a pool whose account id is not one (a token of a subject).
func (r *Reconciler) accountOfPool(ctx context.Context, tenant, pool string) string {
	key := bus.RecordKey(tenant, pool)
	c := &r.poolCache
	c.mu.Lock()
	account, ok := c.accounts[key]
	c.mu.Unlock()
	if ok {
		return account
	}
	p, err := r.pool(ctx, tenant, pool)
	if err != nil || !api.ValidID(api.PrefixAccount, p.ProviderAccountID) {
		return ""
	}
	c.mu.Lock()
	if c.accounts == nil || len(c.accounts) >= poolCacheMax {
		c.accounts = map[string]string{}
	}
	c.accounts[key] = p.ProviderAccountID
	c.mu.Unlock()
	return p.ProviderAccountID
}
