package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/clock"
)

// withQuotas stores the test tenant's record with quotas q (as the tenants
// service does) and makes h's reconciler follow the tenants' quotas,
// returning once it sees q.
func (h *harness) withQuotas(q api.TenantQuotas) *bus.Quotas {
	h.t.Helper()
	data, _ := json.Marshal(api.Tenant{ID: tenant, State: api.TenantActive, Quotas: q, Version: 1})
	if _, err := h.env.Stores.Tenants.Put(context.Background(), bus.RecordKey(bus.TenantRecords, tenant), data); err != nil {
		h.t.Fatal(err)
	}
	quotas, err := bus.WatchQuotas(h.env.Stores.Tenants, zerolog.Nop())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(quotas.Stop)
	bustest.WaitFor(h.t, "the tenant's quotas", func() bool { return quotas.Of(tenant) == q })
	h.rec.o.Quotas = quotas
	return quotas
}

// tryCreate is create answering the error instead of failing the test.
func (h *harness) tryCreate(pool string) (*api.Instance, *api.ComputeError) {
	var inst api.Instance
	err := h.call("create", api.InstanceCreateRequest{PoolID: pool, Flavor: "small"}, &inst)
	if err != nil {
		return nil, api.AsComputeError(err)
	}
	return &inst, nil
}

// wantQuotaRefusal fails unless ce is code naming limit = quota.
func wantQuotaRefusal(t *testing.T, what string, ce *api.ComputeError, code api.Code, limit string, quota int64) {
	t.Helper()
	if ce == nil || ce.Code != code || ce.Details.Limit != limit || ce.Details.Quota != quota {
		var details any
		if ce != nil {
			details = ce.Details
		}
		t.Fatalf("%s: %v (details %v), want %s naming %s = %d", what, ce, details, code, limit, quota)
	}
}

// usageOf reads the tenant's usage record.
func (h *harness) usageOf() usageRecord {
	h.t.Helper()
	u, _, err := bus.NewTable[usageRecord](h.env.Stores.Usage, "usage record").Get(context.Background(), tenant, usageID)
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

// TestInstanceQuotas: creates are refused CAPACITY_UNAVAILABLE naming
// quotas.instancesPerPool (path poolId) and quotas.instances with their
// values once a pool and the tenant hold their quota, a refused create
// writes nothing, and deleting an instance gives its place back.
func TestInstanceQuotas(t *testing.T) {
	h := newHarness(t, fastOptions())
	h.withQuotas(api.TenantQuotas{Instances: 3, InstancesPerPool: 2})
	other := h.otherPool()
	var first *api.Instance
	for i := range 2 {
		inst, ce := h.tryCreate(h.pool.ID)
		if ce != nil {
			t.Fatalf("create %d: %v", i, ce)
		}
		first = inst
	}
	_, ce := h.tryCreate(h.pool.ID)
	wantQuotaRefusal(t, "a third create in the pool", ce, api.CodeCapacityUnavailable, bus.LimitInstancesPerPool, 2)
	if ce.Path() != "poolId" {
		t.Fatalf("refusal path %q, want poolId", ce.Path())
	}
	if _, ce := h.tryCreate(other); ce != nil {
		t.Fatalf("a create in the other pool: %v", ce)
	}
	_, ce = h.tryCreate(other)
	wantQuotaRefusal(t, "a fourth create of the tenant", ce, api.CodeCapacityUnavailable, bus.LimitInstances, 3)
	keys, err := h.env.Stores.InstanceTable().Keys(context.Background(), tenant)
	if err != nil || len(keys) != 3 {
		t.Fatalf("instances stored: %d (%v), want 3", len(keys), err)
	}
	if err := h.call("delete", api.IDRequest{ID: first.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(first.ID)
	if _, ce := h.tryCreate(h.pool.ID); ce != nil {
		t.Fatalf("a create after a delete gave a place back: %v", ce)
	}
	if u := h.usageOf(); u.Instances != 3 || u.Pools[h.pool.ID] != 2 || u.Pools[other] != 1 {
		t.Fatalf("usage record %+v, want 3 instances, 2 in the pool and 1 in the other", u)
	}
}

// TestInstanceQuotaConcurrentCreates: 24 creates at once through two
// replicas of the instance API (each its own connection, stores and
// cache) under a quota of 5: exactly 5 are created, every other one is
// refused naming the quota, and the count says 5.
func TestInstanceQuotaConcurrentCreates(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	quotas := h.withQuotas(api.TenantQuotas{Instances: 5})
	nc := h.env.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := h.opts
	opts.Quotas = quotas
	second := newReconciler(nc, st, opts)
	svc, err := bus.StartService(nc, bus.ServiceConfig{Name: "instances-api", Version: "0.0.1", Endpoints: second.endpoints(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })

	const creates = 24
	var wg sync.WaitGroup
	errs := make(chan *api.ComputeError, creates)
	for range creates {
		wg.Go(func() {
			_, ce := h.tryCreate(h.pool.ID)
			errs <- ce
		})
	}
	wg.Wait()
	close(errs)
	created := 0
	for ce := range errs {
		if ce == nil {
			created++
			continue
		}
		wantQuotaRefusal(t, "a create over the quota", ce, api.CodeCapacityUnavailable, bus.LimitInstances, 5)
	}
	keys, err := h.env.Stores.InstanceTable().Keys(context.Background(), tenant)
	if created != 5 || err != nil || len(keys) != 5 {
		t.Fatalf("%d creates answered, %d instances stored (%v); want 5 of each", created, len(keys), err)
	}
	if u := h.usageOf(); u.Instances != 5 {
		t.Fatalf("usage record %+v, want 5 instances", u)
	}
}

// createRateHarness is an API-only harness on a stopped clock whose tenant
// has quotas.createsPerSecond 2 and has just spent them: two creates
// accepted.
func createRateHarness(t *testing.T) (*harness, *clock.Fake) {
	t.Helper()
	opts := fastOptions()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts.Clock = fake
	h := newHarness(t, opts, startAPI)
	h.withQuotas(api.TenantQuotas{CreatesPerSecond: 2})
	for i := range 2 {
		if _, ce := h.tryCreate(h.pool.ID); ce != nil {
			t.Fatalf("create %d: %v", i, ce)
		}
	}
	return h, fake
}

// TestCreateRateQuota: with quotas.createsPerSecond 2 (on a stopped
// clock) the third create of the second is refused RATE_LIMITED naming
// the quota with a wait, and passes once the wait is over.
func TestCreateRateQuota(t *testing.T) {
	h, fake := createRateHarness(t)
	_, ce := h.tryCreate(h.pool.ID)
	wantQuotaRefusal(t, "a third create in one second", ce, api.CodeRateLimited, bus.LimitCreatesPerSecond, 2)
	wait := ce.RetryAfter()
	if wait <= 0 || wait > time.Second {
		t.Fatalf("retryAfterMs %v, want in (0, 1 s]", wait)
	}
	fake.Advance(wait)
	if _, ce := h.tryCreate(h.pool.ID); ce != nil {
		t.Fatalf("a create after retryAfterMs: %v", ce)
	}
}

// TestCreateRateQuotaSpacesRefusedCallers: with quotas.createsPerSecond 2
// (on a stopped clock), the creates refused in a row are given turns one
// token (500 ms) apart, not all the next token's: 500 ms, 1 s, 1.5 s; at
// the first turn a create passes.
func TestCreateRateQuotaSpacesRefusedCallers(t *testing.T) {
	h, fake := createRateHarness(t)
	var turns []time.Duration
	for i := range 3 {
		_, ce := h.tryCreate(h.pool.ID)
		wantQuotaRefusal(t, fmt.Sprintf("refused create %d", i+1), ce, api.CodeRateLimited, bus.LimitCreatesPerSecond, 2)
		turns = append(turns, ce.RetryAfter())
	}
	if want := []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond}; !slices.Equal(turns, want) {
		t.Fatalf("retryAfterMs of three creates refused in a row: %v, want %v", turns, want)
	}
	fake.Advance(turns[0])
	if _, ce := h.tryCreate(h.pool.ID); ce != nil {
		t.Fatalf("a create at the first turn: %v", ce)
	}
}

// TestUsageRepairAfterTornCreate is the crash between a create's
// reservation and its instance's write (a reservation made, the record
// never written): the count is one too high and the tenant at its quota
// is refused; the first resync only notes the disagreement, the second
// sets the count to the inventory's, and the create passes.
func TestUsageRepairAfterTornCreate(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	h.withQuotas(api.TenantQuotas{Instances: 2})
	if _, ce := h.tryCreate(h.pool.ID); ce != nil {
		t.Fatal(ce)
	}
	if _, err := h.rec.reserveInstance(context.Background(), tenant, h.pool.ID); err != nil {
		t.Fatal(err) // the torn create: counted, never written
	}
	_, ce := h.tryCreate(h.pool.ID)
	wantQuotaRefusal(t, "a create after the torn one", ce, api.CodeCapacityUnavailable, bus.LimitInstances, 2)
	for i, want := range []int64{2, 1} {
		if _, err := h.rec.Resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if u := h.usageOf(); u.Instances != want {
			t.Fatalf("after resync %d the count is %d, want %d", i+1, u.Instances, want)
		}
	}
	if _, ce := h.tryCreate(h.pool.ID); ce != nil {
		t.Fatalf("a create after the repair: %v", ce)
	}
}
