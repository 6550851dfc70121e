package bus_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// putTenant stores tenant id's record with quotas q, as the tenants service does.
func putTenant(t *testing.T, env *bustest.Env, id string, q api.TenantQuotas) {
	t.Helper()
	data, _ := json.Marshal(api.Tenant{ID: id, State: api.TenantActive, Quotas: q, Version: 1})
	if _, err := env.Stores.Tenants.Put(testCtx(t), bus.RecordKey(bus.TenantRecords, id), data); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentListQuota: a tenant at its quotas.concurrentLists gets
// RATE_LIMITED naming the quota (details.limit, details.quota,
// details.retryAfterMs) at once for one more list, other verbs and other
// tenants are unaffected, an answered list frees its place, and a quota
// raised in the tenant record applies without a restart.
func TestConcurrentListQuota(t *testing.T) {
	env := bustest.Start(t)
	putTenant(t, env, "acme", api.TenantQuotas{ConcurrentLists: 1})
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	slowList := func(ctx context.Context, _ *bus.Request) (any, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return api.Empty{}, nil
	}
	call, quotas := startThings(t, env, slowList)

	first := make(chan error, 1)
	go func() { first <- call("acme", "list") }()
	<-entered
	err := call("acme", "list")
	ce := api.AsComputeError(err)
	if ce == nil || ce.Code != api.CodeRateLimited || ce.Details.Limit != bus.LimitConcurrentLists || ce.Details.Quota != 1 ||
		ce.Details.RetryAfterMs == nil || *ce.Details.RetryAfterMs <= 0 {
		t.Fatalf("second list of acme: %v (details %v), want RATE_LIMITED naming %s = 1 with retryAfterMs", err, detailsOf(ce), bus.LimitConcurrentLists)
	}
	if err := call("acme", "get"); err != nil {
		t.Fatalf("a get of acme beside its list: %v", err)
	}
	other := make(chan error, 1)
	go func() { other <- call("globex", "list") }() // globex has no quota
	<-entered
	close(release)
	for _, c := range []chan error{first, other} {
		if err := <-c; err != nil {
			t.Fatalf("list: %v", err)
		}
	}
	if err := call("acme", "list"); err != nil {
		t.Fatalf("a list of acme after its first was answered: %v", err)
	}

	// Raised to 2: two lists at once pass.
	putTenant(t, env, "acme", api.TenantQuotas{ConcurrentLists: 2})
	bustest.WaitFor(t, "the raised quota", func() bool { return quotas.Of("acme").ConcurrentLists == 2 })
	slowDone := make(chan error, 2)
	block := make(chan struct{})
	svc2, err := bus.StartService(env.Connect(t), bus.ServiceConfig{Name: "test2", Version: "1.0.0", Logger: zerolog.Nop(), Quotas: quotas,
		Endpoints: []bus.Endpoint{{Name: "things-list", Subject: bus.Command("*", "widgets", "list"),
			Handler: func(ctx context.Context, _ *bus.Request) (any, error) {
				entered <- struct{}{}
				select {
				case <-block:
				case <-ctx.Done():
				}
				return api.Empty{}, nil
			}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc2.Stop() })
	nc := env.Connect(t)
	for range 2 {
		go func() { slowDone <- bus.Call(testCtx(t), nc, bus.Command("acme", "widgets", "list"), api.Empty{}, nil) }()
		<-entered
	}
	close(block)
	for range 2 {
		if err := <-slowDone; err != nil {
			t.Fatalf("two lists at a quota of 2: %v", err)
		}
	}
}

func detailsOf(ce *api.ComputeError) any {
	if ce == nil {
		return nil
	}
	return ce.Details
}

// TestListsPerSecondQuota: a tenant past its quotas.listsPerSecond (burst:
// one second's lists) gets RATE_LIMITED naming the quota (details.limit,
// details.quota) with retryAfterMs, each further refused caller a turn one
// token (1 / quota) later than the one before instead of the same next
// token; other verbs and other tenants are unaffected.
func TestListsPerSecondQuota(t *testing.T) {
	env := bustest.Start(t)
	putTenant(t, env, "acme", api.TenantQuotas{ListsPerSecond: 2})
	call, _ := startThings(t, env, answerEmpty)
	for i := range 2 {
		if err := call("acme", "list"); err != nil {
			t.Fatalf("list %d of acme within its burst: %v", i+1, err)
		}
	}
	var turns []int64
	for range 3 {
		ce := api.AsComputeError(call("acme", "list"))
		if ce == nil || ce.Code != api.CodeRateLimited || ce.Details.Limit != bus.LimitListsPerSecond || ce.Details.Quota != 2 ||
			ce.Details.RetryAfterMs == nil || *ce.Details.RetryAfterMs <= 0 {
			t.Fatalf("a list of acme past its rate: %v (details %v), want RATE_LIMITED naming %s = 2 with retryAfterMs", ce, detailsOf(ce), bus.LimitListsPerSecond)
		}
		turns = append(turns, *ce.Details.RetryAfterMs)
	}
	// a token every 500 ms: the refused callers' turns are about 500 ms apart
	for i := 1; i < len(turns); i++ {
		if gap := turns[i] - turns[i-1]; gap < 400 {
			t.Fatalf("retryAfterMs of the refused lists %v: turn %d only %d ms after the one before, want about 500", turns, i+1, gap)
		}
	}
	if err := call("acme", "get"); err != nil {
		t.Fatalf("a get of acme past its list rate: %v", err)
	}
	for i := range 5 {
		if err := call("globex", "list"); err != nil {
			t.Fatalf("list %d of globex (no quota): %v", i+1, err)
		}
	}
}

// answerEmpty is a handler that answers {} at once.
func answerEmpty(context.Context, *bus.Request) (any, error) { return api.Empty{}, nil }

// startThings serves things.list (list) and things.get (answerEmpty)
// under the tenants' quotas of env's tenant records, and returns a call of
// one of them for a tenant, and the quotas' watch.
func startThings(t *testing.T, env *bustest.Env, list bus.Handler) (func(tenant, verb string) error, *bus.Quotas) {
	t.Helper()
	quotas, err := bus.WatchQuotas(env.Stores.Tenants, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(quotas.Stop)
	svc, err := bus.StartService(env.NC, bus.ServiceConfig{Name: "test", Version: "1.0.0", Logger: zerolog.Nop(), Quotas: quotas,
		Endpoints: []bus.Endpoint{bus.CommandEndpoint("things", "list", list), bus.CommandEndpoint("things", "get", answerEmpty)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	nc := env.Connect(t)
	return func(tenant, verb string) error {
		return bus.Call(testCtx(t), nc, bus.Command(tenant, "things", verb), api.Empty{}, nil)
	}, quotas
}
