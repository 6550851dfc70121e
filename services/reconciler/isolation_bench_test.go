package reconciler

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider/memory"
)

// BenchmarkTenantIsolation measures what one tenant's flood costs another
// tenant's reads: globex's instances.get and instances.list latency (one
// get then one list, one at a time, COMPUTE_BENCH_SAMPLES pairs per phase,
// default 1,000, or as many as isolationPhaseBudget and the flood allow)
// alone, then while acme floods the instance API with 5,000 creates (64 at
// once) or runs 80 lists at once of its inventory of
// COMPUTE_BENCH_INSTANCES instances (default 10,000) in a loop (its pages
// taken as raw JSON: acme's client is not the replica measured); each flood
// once without quotas, once with acme's quotas (createsPerSecond 100,
// concurrentLists 4; a refused caller waits its retryAfterMs) and once with
// listsPerSecond 20 (pages of 100) added to them. The phases run in
// COMPUTE_BENCH_ROUNDS rounds (default 5), each round globex alone first
// then every flood; it prints each phase's median p99 and p50 of the
// rounds, their ratios to the median alone, every round's p99 and sample
// count and acme's calls answered and refused per second. The instance API
// serves alone (no work consumed). Run it once: go test -run '^$' -bench
// TenantIsolation -benchtime 1x ./services/reconciler/
func BenchmarkTenantIsolation(b *testing.B) {
	n := bustest.EnvInt("COMPUTE_BENCH_INSTANCES", 10_000)
	rounds := bustest.EnvInt("COMPUTE_BENCH_ROUNDS", 5)
	samples := bustest.EnvInt("COMPUTE_BENCH_SAMPLES", 1000)
	// acme's quotas of each flood's phases: none, those of the goal, and a list rate added
	quotaSets := []api.TenantQuotas{{}, {CreatesPerSecond: 100, ConcurrentLists: 4},
		{CreatesPerSecond: 100, ConcurrentLists: 4, ListsPerSecond: 20}}
	for b.Loop() {
		h := newHarness(b, Options{Logger: zerolog.Nop(), ResyncInterval: -1}, startAPI)
		quotas := h.withQuotas(api.TenantQuotas{})
		ctx := context.Background()
		parallel(n, 64, func(int) error {
			inst := api.Instance{ID: api.NewID(api.PrefixInstance), TenantID: tenant, PoolID: h.pool.ID, Flavor: "small",
				Image: "debian-12", Name: "seeded", Generation: 1, Version: 1}
			_, err := h.env.Stores.InstanceTable().Create(ctx, tenant, inst.ID, inst)
			return err
		})
		// the instance API with the tenants' quotas, as Start serves it
		rec := newReconciler(h.env.NC, h.env.Stores, Options{Logger: zerolog.Nop(), ResyncInterval: -1, Quotas: quotas})
		index, err := instanceIndex(rec.instances, rec.o)
		if err != nil {
			b.Fatal(err)
		}
		rec.index = index
		svc, err := bus.StartService(h.env.Connect(b), bus.ServiceConfig{Name: "instances-isolated", Version: "0.0.1",
			Endpoints: rec.endpoints(), Logger: zerolog.Nop(), Quotas: quotas})
		if err != nil {
			b.Fatal(err)
		}
		_ = h.api.Stop() // only the service above answers
		other := h.writePool(otherTenant, memory.ProviderID, "mem", map[string]any{"token": "secret://globex/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "region": "mem1"},
			api.Flavor{Name: "small", OfferID: "small", Image: "debian-12"})
		victim := h.createAs(otherTenant, other)
		for range 9 {
			h.createAs(otherTenant, other)
		}
		floodConn := h.env.Connect(b)
		call := func(verb string, in, out any) func() error {
			return func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				return bus.Call(ctx, floodConn, bus.Command(tenant, bus.ResourceInstances, verb), in, out)
			}
		}
		is := &bustest.Isolation{Victim: "globex", Flooder: "acme", Rounds: rounds, Samples: samples, Budget: isolationPhaseBudget,
			QuotaSets: quotaSets, SetQuotas: func(q api.TenantQuotas) { bustest.SetQuotas(b, h.env.Stores, quotas, tenant, q) },
			Probes: []bustest.Probe{
				{Name: "get", Call: func() error { return h.callAs(otherTenant, "get", api.IDRequest{ID: victim.ID}, nil) }},
				{Name: "list", Call: func() error {
					var page api.List[api.Instance]
					return h.callAs(otherTenant, "list", api.InstanceListRequest{}, &page)
				}},
			}}
		is.Floods = []bustest.Flood{
			{Name: "5000 creates", Run: func(stop <-chan struct{}) {
				var wg sync.WaitGroup
				next := make(chan int)
				for range 64 {
					wg.Go(func() {
						for range next {
							for { // a create refused RATE_LIMITED is sent again after its wait
								err := is.Call(call("create", api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small"}, nil))
								if !api.IsCode(err, api.CodeRateLimited) {
									break
								}
							}
						}
					})
				}
			feed:
				for i := range 5000 {
					select {
					case next <- i:
					case <-stop:
						break feed
					}
				}
				close(next)
				wg.Wait()
			}},
			// the pages are not decoded: acme's client runs elsewhere,
			// not in the replica measured
			{Name: "80 lists", Run: is.Loop(80, func() error {
				var page json.RawMessage
				return call("list", api.InstanceListRequest{}, &page)()
			})},
		}
		b.Logf("acme holds %d instances, globex 10", n)
		is.Run(b)
		_ = svc.Stop()
		index.Stop()
	}
}

// callAs sends an instances command of tenantID on the harness connection.
func (h *harness) callAs(tenantID, verb string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return bus.Call(ctx, h.env.NC, bus.Command(tenantID, bus.ResourceInstances, verb), in, out)
}

// isolationPhaseBudget bounds how long BenchmarkTenantIsolation samples
// globex in one phase of a round, so that a phase whose calls are slow
// (a flood without quotas) does not take minutes for its samples.
const isolationPhaseBudget = 8 * time.Second
