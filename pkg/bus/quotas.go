package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"better-compute.io/compute/pkg/api"
)

// TenantRecords is the internal tenant token of the tenant records in
// compute_tenants: the tenants service writes tenant t under
// RecordKey(TenantRecords, t) ("_tenants.<t>").
const TenantRecords = InternalTenantPrefix + "tenants"

// BucketUsage holds each tenant's instance counts under its quotas
// (<tenant>.instances; owner: the reconciler, services/reconciler/usage.go).
const BucketUsage = "compute_usage"

// Quota field names of the tenant record (api.TenantQuotas), as a refusal's
// details.limit names them.
const (
	LimitInstances        = "quotas.instances"
	LimitInstancesPerPool = "quotas.instancesPerPool"
	LimitCreatesPerSecond = "quotas.createsPerSecond"
	LimitConcurrentLists  = "quotas.concurrentLists"
	LimitListsPerSecond   = "quotas.listsPerSecond"
)

// Quotas is one replica's view of every tenant's application quotas
// (api.TenantQuotas of the tenant records), kept from a watch of
// compute_tenants: a quota set or changed with the tenants service applies
// within the watch's delivery (milliseconds), without a restart; a tenant
// without a record (or before its record arrived) has no quota. It also
// holds the replica's count of each tenant's lists in flight and its
// lists' turns (AdmitList).
// The zero value is not usable; a nil *Quotas has no quota for anyone.
type Quotas struct {
	mu    sync.RWMutex
	of    map[string]api.TenantQuotas
	lists map[string]int64 // lists of each tenant admitted and not yet answered
	// listTurn is, per tenant, the latest retry time a refused list was
	// given (AdmitList): the next refused caller is sent after it.
	listTurn map[string]time.Time
	// listRate is each tenant's token bucket of quotas.listsPerSecond
	// (burst: one second's lists).
	listRate map[string]*rate.Limiter
	cancel   context.CancelFunc
	done     chan struct{}
}

// quotasReadyTimeout bounds WatchQuotas' wait for the records that exist.
const quotasReadyTimeout = 30 * time.Second

// WatchQuotas watches the tenant records of kv (Stores.Tenants) and returns
// once it holds every record stored when it began. Its watch ends with
// Stop, or when the connection closes. Errors: the watch could not start,
// or the records did not arrive within 30 s.
func WatchQuotas(kv jetstream.KeyValue, log zerolog.Logger) (*Quotas, error) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kv.Watch(ctx, RecordKey(TenantRecords, "*"))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch tenant quotas: %w", err)
	}
	q := &Quotas{of: map[string]api.TenantQuotas{}, lists: map[string]int64{}, listTurn: map[string]time.Time{},
		listRate: map[string]*rate.Limiter{}, cancel: cancel, done: make(chan struct{})}
	ready := make(chan struct{})
	go q.follow(w, ready, log)
	select {
	case <-ready:
		return q, nil
	case <-q.done:
		return nil, errors.New("watch tenant quotas: the watch ended before the records arrived")
	case <-time.After(quotasReadyTimeout):
		q.Stop()
		return nil, errors.New("watch tenant quotas: the records did not arrive in time")
	}
}

// follow applies the watch's entries until it ends; ready is closed once
// the stored records are in (the watch's nil marker).
func (q *Quotas) follow(w jetstream.KeyWatcher, ready chan struct{}, log zerolog.Logger) {
	defer close(q.done)
	defer func() { _ = w.Stop() }()
	for e := range w.Updates() {
		if e == nil {
			close(ready)
			continue
		}
		_, tenant, _ := SplitKey(e.Key())
		if e.Operation() != jetstream.KeyValuePut {
			q.set(tenant, api.TenantQuotas{})
			continue
		}
		var t api.Tenant
		if err := json.Unmarshal(e.Value(), &t); err != nil {
			log.Warn().Str("tenant", tenant).Err(err).Msg("tenant record not decoded; its quotas are not applied")
			continue
		}
		q.set(tenant, t.Quotas)
	}
}

func (q *Quotas) set(tenant string, quotas api.TenantQuotas) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if quotas == (api.TenantQuotas{}) {
		delete(q.of, tenant)
		return
	}
	q.of[tenant] = quotas
}

// Of is tenant's quotas as last seen (zero: none). A nil q has none.
func (q *Quotas) Of(tenant string) api.TenantQuotas {
	if q == nil {
		return api.TenantQuotas{}
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.of[tenant]
}

// Stop ends the watch and waits for it.
func (q *Quotas) Stop() {
	q.cancel()
	<-q.done
}

// AdmitList counts one list of tenant in, unless the tenant's
// quotas.concurrentLists lists are in flight on this replica already:
// then it answers RATE_LIMITED (details.limit quotas.concurrentLists,
// details.quota its value, details.retryAfterMs the caller's turn). A list
// takes about answer, so a slot comes free every answer / quota: the
// refused callers are given turns that far apart, each after the turn
// given last (at least answer / quota from now), so that the callers
// refused together come back one after the other as slots free up,
// instead of all at once to be refused again. A list beyond the tenant's
// quotas.listsPerSecond (a token bucket per tenant and replica, burst one
// second's lists) is answered RATE_LIMITED too (details.limit
// quotas.listsPerSecond), its turn the bucket's next token for the first
// caller refused and one token after the turn given last for the next
// ones; a list refused for either quota takes nothing of the other. done counts
// the list out; call it once the list is answered. A nil q, a tenant ""
// (an internal or admin subject) and a tenant without the quota are
// always admitted. The count is per replica: with n replicas a tenant may
// run up to n × its quota at once (each replica's share of the work is
// bounded by it, which is what keeps one tenant from taking a replica's
// workers).
func (q *Quotas) AdmitList(tenant string, answer time.Duration) (done func(), err error) {
	if q == nil || tenant == "" {
		return func() {}, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	quotas := q.of[tenant]
	limit := quotas.ConcurrentLists
	if limit <= 0 && quotas.ListsPerSecond <= 0 {
		return func() {}, nil
	}
	if limit > 0 && q.lists[tenant] >= limit {
		now := time.Now()
		gap := answer / time.Duration(limit)
		turn := q.listTurn[tenant]
		if turn.Before(now) {
			turn = now
		}
		turn = turn.Add(gap)
		q.listTurn[tenant] = turn
		return nil, api.RateLimited(max(turn.Sub(now), gap), "tenant %s already runs %d lists at once, its quota (%s)",
			tenant, limit, LimitConcurrentLists).
			WithLimit(LimitConcurrentLists, limit)
	}
	if err := q.takeList(tenant, quotas.ListsPerSecond); err != nil {
		return nil, err
	}
	if turn, ok := q.listTurn[tenant]; ok && turn.Before(time.Now()) {
		delete(q.listTurn, tenant) // every refused caller's turn has come
	}
	if limit <= 0 {
		return func() {}, nil
	}
	q.lists[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			if q.lists[tenant]--; q.lists[tenant] <= 0 {
				delete(q.lists, tenant)
			}
		})
	}, nil
}

// takeList takes one of tenant's lists of this second from its bucket of
// perSecond (none: always; q.mu held). Errors: RATE_LIMITED naming
// quotas.listsPerSecond with the caller's turn (AdmitList).
func (q *Quotas) takeList(tenant string, perSecond int64) error {
	if perSecond <= 0 {
		delete(q.listRate, tenant)
		return nil
	}
	lim := PerSecondLimiter(q.listRate[tenant], perSecond)
	q.listRate[tenant] = lim
	now := time.Now()
	turn, ok := TakeTurn(lim, perSecond, now, q.listTurn[tenant])
	if ok {
		return nil
	}
	q.listTurn[tenant] = turn
	return api.RateLimited(turn.Sub(now), "tenant %s lists at most %d pages per second (%s)", tenant, perSecond, LimitListsPerSecond).
		WithLimit(LimitListsPerSecond, perSecond)
}

// PerSecondLimiter is lim when it allows perSecond tokens a second, else
// a new token bucket of perSecond a second with one second's burst (the
// quota changed, or there was none yet). perSecond > 0.
func PerSecondLimiter(lim *rate.Limiter, perSecond int64) *rate.Limiter {
	if lim != nil && lim.Limit() == rate.Limit(perSecond) {
		return lim
	}
	return rate.NewLimiter(rate.Limit(perSecond), int(perSecond))
}

// TakeTurn takes one token of lim (a bucket of perSecond a second) at
// now: ok when there was one. When there was none it takes nothing and
// returns the refused caller's turn: the bucket's next token, or one
// token (1 / perSecond) after last, the turn given the caller refused
// before it, whichever is later, so that callers refused together come
// back one token apart instead of all at the next token, to be refused
// again. The caller keeps the turn as the next one's last.
func TakeTurn(lim *rate.Limiter, perSecond int64, now, last time.Time) (turn time.Time, ok bool) {
	res := lim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	if wait <= 0 {
		return now, true
	}
	res.CancelAt(now)
	turn = now.Add(wait)
	if next := last.Add(time.Second / time.Duration(perSecond)); next.After(turn) {
		turn = next
	}
	return turn, false
}

// sharedQuotas is the one Quotas of a Stores, started by its first use.
type sharedQuotas struct {
	once   sync.Once
	quotas *Quotas
	err    error
}

// Quotas is the watch of every tenant's quotas (WatchQuotas) that the
// services of st share, started by the first call; it lives as long as
// st's connection. Errors: those of WatchQuotas (the first call's, every
// time).
func (st *Stores) Quotas(log zerolog.Logger) (*Quotas, error) {
	st.quotas.once.Do(func() { st.quotas.quotas, st.quotas.err = WatchQuotas(st.Tenants, log) })
	return st.quotas.quotas, st.quotas.err
}
