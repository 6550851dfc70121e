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
// tenant's reads: globex's instances.get and instances.list latency (one
// get then one list, one at a time, COMPUTE_BENCH_SAMPLES pairs per phase,
// default 1,000, or as many as isolationPhaseBudget and the flood allow)
// alone, then while acme floods the instance API with 5,000 creates (64 at
// once) or runs 80 lists at once of its inventory of
// COMPUTE_BENCH_INSTANCES instances (default 10,000) in a loop; each flood
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
	n := envInt("COMPUTE_BENCH_INSTANCES", 10_000)
	rounds := envInt("COMPUTE_BENCH_ROUNDS", 5)
	samples := envInt("COMPUTE_BENCH_SAMPLES", 1000)
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
		// measure samples globex's get and list until it has samples pairs,
		// isolationPhaseBudget has passed or flooding is closed (the flood ended)
		measure := func(flooding <-chan struct{}) latencies {
			var gets, lists []time.Duration
			deadline := time.Now().Add(isolationPhaseBudget)
		sample:
			for len(gets) < samples && time.Now().Before(deadline) {
				select {
				case <-flooding:
					break sample
				default:
				}
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
			return latencies{getP50: percentile(gets, 50), getP99: percentile(gets, 99),
				listP50: percentile(lists, 50), listP99: percentile(lists, 99), n: len(gets)}
		}
		type phase struct {
			name   string
			q      api.TenantQuotas
			rounds []latencies
			rates  []string // acme's answered and refused calls per second, per round
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
					ph.rounds = append(ph.rounds, measure(nil))
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
				l := measure(done)
				during := time.Since(start)
				nRefused, nAnswered := refused.Load(), answered.Load()
				close(stop)
				<-done
				ph.rounds = append(ph.rounds, l)
				ph.rates = append(ph.rates, fmt.Sprintf("%.0f/%.0f", float64(nAnswered)/during.Seconds(), float64(nRefused)/during.Seconds()))
			}
		}
		alone := medians(phases[0].rounds)
		b.Logf("globex alone: get p99 %s p50 %s, list p99 %s p50 %s ms (median of %d rounds: p99 %v, %v; samples %v; acme holds %d instances)",
			ms(alone.getP99), ms(alone.getP50), ms(alone.listP99), ms(alone.listP50), rounds,
			roundsOf(phases[0].rounds, func(l latencies) time.Duration { return l.getP99 }),
			roundsOf(phases[0].rounds, func(l latencies) time.Duration { return l.listP99 }), counts(phases[0].rounds), n)
		for _, ph := range phases[1:] {
			quota := "no quotas"
			if ph.q != (api.TenantQuotas{}) {
				quota = fmt.Sprintf("quotas createsPerSecond %d, concurrentLists %d, listsPerSecond %d", ph.q.CreatesPerSecond, ph.q.ConcurrentLists, ph.q.ListsPerSecond)
			}
			m := medians(ph.rounds)
			b.Logf("acme's %s (%s): globex get p99 %s ms (%.2f× alone) p50 %s ms (%.2f×), list p99 %s ms (%.2f× alone) p50 %s ms (%.2f×); "+
				"rounds' p99 %v, %v; samples %v; acme answered/refused per second %v", ph.name, quota,
				ms(m.getP99), ratio(m.getP99, alone.getP99), ms(m.getP50), ratio(m.getP50, alone.getP50),
				ms(m.listP99), ratio(m.listP99, alone.listP99), ms(m.listP50), ratio(m.listP50, alone.listP50),
				roundsOf(ph.rounds, func(l latencies) time.Duration { return l.getP99 }),
				roundsOf(ph.rounds, func(l latencies) time.Duration { return l.listP99 }), counts(ph.rounds), ph.rates)
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

// isolationPhaseBudget bounds how long BenchmarkTenantIsolation samples
// globex in one phase of a round, so that a phase whose calls are slow
// (a flood without quotas) does not take minutes for its samples.
const isolationPhaseBudget = 8 * time.Second

// latencies are globex's get and list percentiles in one phase of a round,
// from n samples of each.
type latencies struct {
	getP50, getP99, listP50, listP99 time.Duration
	n                                int
}

// medians is the median of each percentile of rounds.
func medians(rounds []latencies) latencies {
	of := func(f func(latencies) time.Duration) time.Duration {
		ds := make([]time.Duration, len(rounds))
		for i, l := range rounds {
			ds[i] = f(l)
		}
		return median(ds)
	}
	return latencies{getP50: of(func(l latencies) time.Duration { return l.getP50 }),
		getP99:  of(func(l latencies) time.Duration { return l.getP99 }),
		listP50: of(func(l latencies) time.Duration { return l.listP50 }),
		listP99: of(func(l latencies) time.Duration { return l.listP99 })}
}

// roundsOf is one percentile of each round, rounded to 0.1 ms, for a log line.
func roundsOf(rounds []latencies, f func(latencies) time.Duration) []time.Duration {
	out := make([]time.Duration, len(rounds))
	for i, l := range rounds {
		out[i] = f(l).Round(100 * time.Microsecond)
	}
	return out
}

// counts is each round's number of samples.
func counts(rounds []latencies) []int {
	out := make([]int, len(rounds))
	for i, l := range rounds {
		out[i] = l.n
	}
	return out
}

// ratio is d over base.
func ratio(d, base time.Duration) float64 { return d.Seconds() / base.Seconds() }

// median is the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// percentile is the p-th percentile of ds (nearest rank; 0 for no samples).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
