package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider/memory"
)

// BenchmarkTenantIsolation measures what one tenant's flood costs another
// tenant's reads: globex's instances.get and instances.list p99 (200 of
// each, one at a time) alone, then while acme floods the instance API with
// 5,000 creates (64 at once) or runs 80 lists at once of its inventory of
// COMPUTE_BENCH_INSTANCES instances (default 10,000) in a loop; each flood
// once without quotas, once with acme's quotas (createsPerSecond 100,
// concurrentLists 4; a refused caller waits its retryAfterMs) and once with
// listsPerSecond 20 (pages of 100) added to them. The phases run in
// COMPUTE_BENCH_ROUNDS rounds (default 3), each round globex alone first
// then every flood; it prints each phase's median p99 of the rounds, its
// ratio to the median alone, every round's p99 and acme's calls answered
// and refused per second. The instance API serves alone
// (no work consumed). Run it once: go test -run '^$' -bench
// TenantIsolation -benchtime 1x ./services/reconciler/
func BenchmarkTenantIsolation(b *testing.B) {
	n := envInt("COMPUTE_BENCH_INSTANCES", 10_000)
	rounds := envInt("COMPUTE_BENCH_ROUNDS", 3)
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
		var refused, answered atomic.Int64 // acme's calls refused RATE_LIMITED, and all answered
		call := func(tenantID, verb string, in, out any) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			defer answered.Add(1)
			return bus.Call(ctx, floodConn, bus.Command(tenantID, bus.ResourceInstances, verb), in, out)
		}
		// honour waits a refused call's retryAfterMs; false for another error
		honour := func(err error) bool {
			ce := api.AsComputeError(err)
			if ce == nil {
				return true
			}
			if ce.Code == api.CodeRateLimited {
				refused.Add(1)
				time.Sleep(ce.RetryAfter())
				return true
			}
			return ce.Code == api.CodeCapacityUnavailable
		}
		floods := map[string]func(stop <-chan struct{}){
			"5000 creates": func(stop <-chan struct{}) {
				var wg sync.WaitGroup
				next := make(chan int)
				for range 64 {
					wg.Go(func() {
						for range next {
							for {
								err := call(tenant, "create", api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small"}, nil)
								if !api.IsCode(err, api.CodeRateLimited) || !honour(err) {
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
			},
			"80 lists": func(stop <-chan struct{}) {
				var wg sync.WaitGroup
				for range 80 {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							var page api.List[api.Instance]
							if err := call(tenant, "list", api.InstanceListRequest{}, &page); err != nil && !honour(err) {
								return
							}
						}
					})
				}
				wg.Wait()
			},
		}
		measure := func() (get, list time.Duration) {
			var gets, lists []time.Duration
			for range 200 {
				start := time.Now()
				if err := h.callAs(otherTenant, "get", api.IDRequest{ID: victim.ID}, nil); err != nil {
					b.Fatalf("globex get: %v", err)
				}
				gets = append(gets, time.Since(start))
				start = time.Now()
				var page api.List[api.Instance]
				if err := h.callAs(otherTenant, "list", api.InstanceListRequest{}, &page); err != nil {
					b.Fatalf("globex list: %v", err)
				}
				lists = append(lists, time.Since(start))
			}
			return p99(gets), p99(lists)
		}
		type phase struct {
			name  string
			q     api.TenantQuotas
			gets  []time.Duration // p99 of each round
			lists []time.Duration
			rates []string // acme's answered and refused calls per second, per round
		}
		phases := []*phase{{name: "alone"}}
		for _, name := range []string{"5000 creates", "80 lists"} {
			for _, q := range quotaSets {
				phases = append(phases, &phase{name: name, q: q})
			}
		}
		for range rounds {
			for _, ph := range phases {
				if ph.name == "alone" {
					get, list := measure()
					ph.gets, ph.lists = append(ph.gets, get), append(ph.lists, list)
					continue
				}
				h.setQuotas(quotas, ph.q)
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() { floods[ph.name](stop); close(done) }()
				time.Sleep(200 * time.Millisecond) // the flood under way
				refused.Store(0)
				answered.Store(0)
				start := time.Now()
				get, list := measure()
				during := time.Since(start)
				nRefused, nAnswered := refused.Load(), answered.Load()
				close(stop)
				<-done
				ph.gets, ph.lists = append(ph.gets, get), append(ph.lists, list)
				ph.rates = append(ph.rates, fmt.Sprintf("%.0f/%.0f", float64(nAnswered)/during.Seconds(), float64(nRefused)/during.Seconds()))
			}
		}
		aloneGet, aloneList := median(phases[0].gets), median(phases[0].lists)
		b.Logf("globex alone: get p99 %v, list p99 %v (median of %d rounds: %v, %v; acme holds %d instances)", aloneGet.Round(time.Microsecond),
			aloneList.Round(time.Microsecond), rounds, rounded(phases[0].gets), rounded(phases[0].lists), n)
		for _, ph := range phases[1:] {
			quota := "no quotas"
			if ph.q != (api.TenantQuotas{}) {
				quota = fmt.Sprintf("quotas createsPerSecond %d, concurrentLists %d, listsPerSecond %d", ph.q.CreatesPerSecond, ph.q.ConcurrentLists, ph.q.ListsPerSecond)
			}
			get, list := median(ph.gets), median(ph.lists)
			b.Logf("acme's %s (%s): globex get p99 %v (%.2f× alone), list p99 %v (%.2f× alone); rounds %v, %v; acme answered/refused per second %v", ph.name, quota,
				get.Round(time.Microsecond), get.Seconds()/aloneGet.Seconds(), list.Round(time.Microsecond), list.Seconds()/aloneList.Seconds(),
				rounded(ph.gets), rounded(ph.lists), ph.rates)
		}
		_ = svc.Stop()
		index.Stop()
	}
}

// setQuotas stores the test tenant's quotas q and waits until quotas shows them.
func (h *harness) setQuotas(quotas *bus.Quotas, q api.TenantQuotas) {
	h.t.Helper()
	data, _ := json.Marshal(api.Tenant{ID: tenant, State: api.TenantActive, Quotas: q, Version: 1})
	if _, err := h.env.Stores.Tenants.Put(context.Background(), bus.RecordKey(bus.TenantRecords, tenant), data); err != nil {
		h.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for quotas.Of(tenant) != q {
		if time.Now().After(deadline) {
			h.t.Fatalf("quotas %+v not seen", q)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// callAs sends an instances command of tenantID on the harness connection.
func (h *harness) callAs(tenantID, verb string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return bus.Call(ctx, h.env.NC, bus.Command(tenantID, bus.ResourceInstances, verb), in, out)
}

// median is the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// rounded is ds rounded to 0.1 ms, for a log line.
func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Microsecond)
	}
	return out
}

// p99 is the 99th percentile of ds.
func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)]
}
