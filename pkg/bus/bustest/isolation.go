package bustest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// EnvInt is the positive integer in the environment variable name, or def
// (unset, not a number, or not above 0): a benchmark's size knob.
func EnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// Isolation measures what one tenant's floods (the flooder's) cost
// another tenant's calls (the victim's probes): each probe's p50 and p99
// alone, then while each flood runs under each of QuotaSets, in Rounds
// rounds (each round the victim alone first, then every flood), and logs
// each phase's median p99 and p50 of the rounds with their ratios to the
// median alone, each round's p99 and sample count, and the flooder's
// calls answered and refused per second.
type Isolation struct {
	// Victim and Flooder name the tenants in the log lines.
	Victim, Flooder string
	// Probes are the victim's calls, each made once per sample, one after
	// the other.
	Probes []Probe
	// Floods are the flooder's loads.
	Floods []Flood
	// QuotaSets are the flooder's quotas, one phase of each flood per set
	// (the zero value: none).
	QuotaSets []api.TenantQuotas
	// SetQuotas stores the flooder's quotas and returns once the services
	// apply them.
	SetQuotas func(api.TenantQuotas)
	// Rounds of every phase (at least 1); Samples per phase at most; a
	// phase samples for Budget at most, and only while its flood lasts.
	Rounds, Samples int
	Budget          time.Duration

	answered, refused atomic.Int64
}

// Probe is one call of the victim's, named for the log ("get", "list").
type Probe struct {
	Name string
	Call func() error
}

// Flood is one load of the flooder's, named for the log ("80 lists"). Run
// loads until stop is closed, making each call through Isolation.Call; a
// flood that returns earlier ends its phase's sampling.
type Flood struct {
	Name string
	Run  func(stop <-chan struct{})
}

// Call makes one of the flooder's calls, counts it answered, and returns
// its error. A call refused RATE_LIMITED is counted refused too, and Call
// waits its retryAfterMs before it returns.
func (is *Isolation) Call(call func() error) error {
	err := call()
	is.answered.Add(1)
	if api.IsCode(err, api.CodeRateLimited) {
		is.refused.Add(1)
		time.Sleep(api.AsComputeError(err).RetryAfter())
	}
	return err
}

// phase is one line of the report: a flood under one quota set, or the
// victim alone (flood nil).
type phase struct {
	flood  *Flood
	quotas api.TenantQuotas
	rounds [][]percentiles // per round, per probe
	rates  []string        // the flooder's answered and refused calls per second, per round
}

// percentiles are one probe's p50 and p99 of one phase of a round, from n
// samples.
type percentiles struct {
	p50, p99 time.Duration
	n        int
}

// Run measures every phase in turn and logs the report on tb.
func (is *Isolation) Run(tb testing.TB) {
	tb.Helper()
	phases := []*phase{{}}
	for i := range is.Floods {
		for _, q := range is.QuotaSets {
			phases = append(phases, &phase{flood: &is.Floods[i], quotas: q})
		}
	}
	for range max(is.Rounds, 1) {
		for _, ph := range phases {
			if ph.flood == nil {
				ph.rounds = append(ph.rounds, is.measure(tb, nil))
				continue
			}
			is.SetQuotas(ph.quotas)
			stop, done := make(chan struct{}), make(chan struct{})
			go func() { ph.flood.Run(stop); close(done) }()
			time.Sleep(200 * time.Millisecond) // the flood under way
			is.refused.Store(0)
			is.answered.Store(0)
			start := time.Now()
			l := is.measure(tb, done)
			during := time.Since(start)
			nRefused, nAnswered := is.refused.Load(), is.answered.Load()
			close(stop)
			<-done
			ph.rounds = append(ph.rounds, l)
			ph.rates = append(ph.rates, fmt.Sprintf("%.0f/%.0f", float64(nAnswered)/during.Seconds(), float64(nRefused)/during.Seconds()))
		}
	}
	is.SetQuotas(api.TenantQuotas{})
	alone := phases[0].medians()
	var line strings.Builder
	for i, p := range is.Probes {
		fmt.Fprintf(&line, "%s p99 %s p50 %s ms (rounds' p99 %v); ", p.Name, ms(alone[i].p99), ms(alone[i].p50), phases[0].roundsOf(i))
	}
	tb.Logf("%s alone: %ssamples %v", is.Victim, line.String(), phases[0].counts())
	for _, ph := range phases[1:] {
		quota := "no quotas"
		if ph.quotas != (api.TenantQuotas{}) {
			quota = fmt.Sprintf("quotas createsPerSecond %d, concurrentLists %d, listsPerSecond %d",
				ph.quotas.CreatesPerSecond, ph.quotas.ConcurrentLists, ph.quotas.ListsPerSecond)
		}
		m := ph.medians()
		line.Reset()
		for i, p := range is.Probes {
			fmt.Fprintf(&line, "%s p99 %s ms (%.2f× alone) p50 %s ms (%.2f×), rounds' p99 %v; ", p.Name,
				ms(m[i].p99), ratio(m[i].p99, alone[i].p99), ms(m[i].p50), ratio(m[i].p50, alone[i].p50), ph.roundsOf(i))
		}
		tb.Logf("%s's %s (%s): %s %ssamples %v; %s answered/refused per second %v", is.Flooder, ph.flood.Name, quota,
			is.Victim, line.String(), ph.counts(), is.Flooder, ph.rates)
	}
}

// measure samples the victim's probes until it has Samples of each, Budget
// has passed or flooding is closed (the flood ended).
func (is *Isolation) measure(tb testing.TB, flooding <-chan struct{}) []percentiles {
	tb.Helper()
	samples := make([][]time.Duration, len(is.Probes))
	deadline := time.Now().Add(is.Budget)
sample:
	for len(samples[0]) < is.Samples && time.Now().Before(deadline) {
		select {
		case <-flooding:
			break sample
		default:
		}
		for i, p := range is.Probes {
			start := time.Now()
			if err := p.Call(); err != nil {
				tb.Fatalf("%s %s: %v", is.Victim, p.Name, err)
			}
			samples[i] = append(samples[i], time.Since(start))
		}
	}
	out := make([]percentiles, len(is.Probes))
	for i, ds := range samples {
		out[i] = percentiles{p50: percentile(ds, 50), p99: percentile(ds, 99), n: len(ds)}
	}
	return out
}

// medians is, per probe, the median of each percentile over the rounds.
func (ph *phase) medians() []percentiles {
	out := make([]percentiles, len(ph.rounds[0]))
	for i := range out {
		p50s, p99s := make([]time.Duration, len(ph.rounds)), make([]time.Duration, len(ph.rounds))
		for r, round := range ph.rounds {
			p50s[r], p99s[r] = round[i].p50, round[i].p99
		}
		out[i] = percentiles{p50: median(p50s), p99: median(p99s)}
	}
	return out
}

// roundsOf is probe i's p99 of each round, rounded to 0.1 ms.
func (ph *phase) roundsOf(i int) []time.Duration {
	out := make([]time.Duration, len(ph.rounds))
	for r, round := range ph.rounds {
		out[r] = round[i].p99.Round(100 * time.Microsecond)
	}
	return out
}

// counts is each round's number of samples.
func (ph *phase) counts() []int {
	out := make([]int, len(ph.rounds))
	for r, round := range ph.rounds {
		out[r] = round[0].n
	}
	return out
}

// ratio is d over base.
func ratio(d, base time.Duration) float64 { return d.Seconds() / base.Seconds() }

// ms is d in milliseconds with two decimals.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

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

// SetQuotas stores tenant's record with quotas q in st's tenants bucket
// and waits until quotas (a watch of that bucket) shows them.
func SetQuotas(tb testing.TB, st *bus.Stores, quotas *bus.Quotas, tenant string, q api.TenantQuotas) {
	tb.Helper()
	data, _ := json.Marshal(api.Tenant{ID: tenant, State: api.TenantActive, Quotas: q, Version: 1})
	if _, err := st.Tenants.Put(context.Background(), bus.RecordKey(bus.TenantRecords, tenant), data); err != nil {
		tb.Fatal(err)
	}
	WaitFor(tb, "the tenant's quotas", func() bool { return quotas.Of(tenant) == q })
}

// Loop is a flood of n goroutines, each making call through Call again
// and again until stop is closed; one whose call fails otherwise than
// RATE_LIMITED or CAPACITY_UNAVAILABLE stops (when all have, the flood
// has ended).
func (is *Isolation) Loop(n int, call func() error) func(stop <-chan struct{}) {
	return func(stop <-chan struct{}) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := is.Call(call); err != nil && !api.IsCode(err, api.CodeRateLimited, api.CodeCapacityUnavailable) {
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
