package reconciler

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// fleetRun is what one fleet of a calls benchmark cost.
type fleetRun struct {
	calls, limited int
	elapsed        time.Duration
}

// runHetznerFleet creates n instances at once on a Hetzner emulator whose
// rate-limit bucket holds size requests refilled at refill per second,
// with the provider's batch window (0: batching off), waits until all
// run, and returns the emulator's exact request count, its 429 count and
// the time from the first create to the last instance running.
func runHetznerFleet(b *testing.B, n int, window time.Duration, size int, refill float64) fleetRun {
	b.Helper()
	h := newHarness(b, Options{Logger: zerolog.Nop(), ResyncInterval: -1})
	emu, err := emulator.Start(emulator.Options{RateLimitSize: size, RateLimitRefillPerSecond: refill}, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = emu.Close() })
	def := hetzner.Definition(hetzner.WithEndpoint(emu.URL()), hetzner.WithHTTPClient(&http.Client{Transport: http.DefaultTransport}),
		hetzner.WithBatchWindow(window))
	h.pool = h.servePool(def, "hz", map[string]any{"token": "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "location": "fsn1"},
		api.Flavor{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"})
	start := time.Now()
	ids := h.createMany(n, fmt.Sprintf("calls-%d", time.Now().UnixNano()))
	h.waitPhases(ids, api.PhaseRunning, 30*time.Minute)
	return fleetRun{calls: sumCalls(emu.Emulator().CallCounts()), limited: emu.Emulator().RateLimitedCalls(), elapsed: time.Since(start)}
}

// BenchmarkHetznerCallsPerInstance prints the exact API requests per
// instance for create→running with 1, 50 and 500 instances of one account
// in flight, with the provider's batching off (before) and on (after), on
// Hetzner's real budget (3,600 burst, 1 per second: these fleets fit the
// burst). Run once:
//
//	go test -run '^$' -bench HetznerCallsPerInstance -benchtime 1x ./services/reconciler/
func BenchmarkHetznerCallsPerInstance(b *testing.B) {
	for b.Loop() {
		for _, n := range []int{1, 50, 500} {
			before := runHetznerFleet(b, n, 0, 3600, 1)
			after := runHetznerFleet(b, n, hetzner.DefaultBatchWindow, 3600, 1)
			b.Logf("%3d in flight: before %.2f requests/instance (%d, %d refused, all running in %v); after %.2f (%d, %d refused, %v); ratio %.3f",
				n, float64(before.calls)/float64(n), before.calls, before.limited, before.elapsed.Round(10*time.Millisecond),
				float64(after.calls)/float64(n), after.calls, after.limited, after.elapsed.Round(10*time.Millisecond),
				float64(after.calls)/float64(before.calls))
			b.ReportMetric(float64(after.calls)/float64(n), fmt.Sprintf("calls/instance-%d", n))
		}
	}
}

// BenchmarkHetznerFleetBudget measures a fleet bound by the API budget,
// before (batching off) and after, in one run: COMPUTE_BENCH_INSTANCES
// (default 500) instances on a bucket of 3,600/k requests refilled at k
// per second (k = COMPUTE_BENCH_BUDGET_SCALE, default 20). That is
// Hetzner's budget (3,600 burst, 1 per second) for a fleet k times larger,
// with every budget-bound second lasting 1/k² s: 500 instances at k = 20
// stand for 10,000 servers on a real project, 400 times faster.
//
//	go test -run '^$' -bench HetznerFleetBudget -benchtime 1x ./services/reconciler/
func BenchmarkHetznerFleetBudget(b *testing.B) {
	n := envInt("COMPUTE_BENCH_INSTANCES", 500)
	k := float64(envInt("COMPUTE_BENCH_BUDGET_SCALE", 20))
	for b.Loop() {
		before := runHetznerFleet(b, n, 0, int(3600/k), k)
		after := runHetznerFleet(b, n, hetzner.DefaultBatchWindow, int(3600/k), k)
		b.Logf("%d instances, bucket %d + %.0f/s: before %v (%d requests, %d refused); after %v (%d requests, %d refused); fleet time ratio %.2f",
			n, int(3600/k), k, before.elapsed.Round(100*time.Millisecond), before.calls, before.limited,
			after.elapsed.Round(100*time.Millisecond), after.calls, after.limited, after.elapsed.Seconds()/before.elapsed.Seconds())
		b.ReportMetric(after.elapsed.Seconds()/before.elapsed.Seconds(), "fleet-time-ratio")
		if os.Getenv("COMPUTE_BENCH_VERBOSE") != "" {
			b.Logf("real-project equivalent (x%.0f): before %v, after %v", k*k,
				time.Duration(before.elapsed.Seconds()*k*k)*time.Second, time.Duration(after.elapsed.Seconds()*k*k)*time.Second)
		}
	}
}
