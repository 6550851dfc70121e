package reconciler

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
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
	return runHetznerFleetAt(b, n, window, size, refill, 1)
}

// runHetznerFleetAt is runHetznerFleet with every duration of the run
// (the bucket's refill, the emulator's actions, the provider's action polls
// and batch window, the reconciler's poll delays and retries) scaled as on
// a clock speed times faster than the wall: the bucket refills at refill ×
// speed per wall second, an action takes 1 s / speed. The elapsed time it
// returns is the wall's; times speed, it is the fleet time on that clock.
// Not scaled: the bus and the passes' CPU, call timeouts, and the whole
// seconds of RateLimit-Reset (speed seconds on that clock), from which the
// pacing reads the refill a little low: all of them lengthen the fleet.
func runHetznerFleetAt(b *testing.B, n int, window time.Duration, size int, refill, speed float64) fleetRun {
	b.Helper()
	scaled := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speed) }
	opts := Options{Logger: zerolog.Nop(), ResyncInterval: -1}
	opts.defaults()
	opts.PollInterval, opts.Retry.Initial, opts.Retry.Max = scaled(opts.PollInterval), scaled(opts.Retry.Initial), scaled(opts.Retry.Max)
	h := newHarness(b, opts)
	emu, err := emulator.Start(emulator.Options{RateLimitSize: size, RateLimitRefillPerSecond: refill * speed,
		ActionDuration: scaled(emulator.DefaultActionDuration)}, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = emu.Close() })
	def := hetzner.Definition(hetzner.WithEndpoint(emu.URL()), hetzner.WithHTTPClient(&http.Client{Transport: http.DefaultTransport}),
		hetzner.WithBatchWindow(scaled(window)), hetzner.WithPollInterval(scaled(hetzner.DefaultPollInterval)))
	h.pool = h.servePool(def, "hz", map[string]any{"token": "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "location": "fsn1"},
		api.Flavor{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"})
	start := time.Now()
	ids := h.createMany(n, fmt.Sprintf("calls-%d", time.Now().UnixNano()))
	h.waitPhases(ids, api.PhaseRunning, 60*time.Minute)
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

// BenchmarkHetznerFleetBudget prints the fleet time under Hetzner's real
// budget, before (batching off) and after, in one run: for each N of
// COMPUTE_BENCH_FLEETS (default "1000,10000"), N instances of one account
// created at once against the emulator's bucket of 3,600 requests refilled
// at 1 per second, on a clock COMPUTE_BENCH_CLOCK_SPEED times faster than
// the wall (default 50; runHetznerFleetAt), or on the wall clock for a
// fleet whose 2 requests per instance fit the burst (the budget never binds
// it). The fleet time printed is simulated: the wall time times the speed. Next to it, the budget's
// floor: the requests beyond the burst at 1 per second. What the scaling
// does not shrink (the bus, the passes' CPU) counts speed times over in the
// simulated time, so a speed the machine cannot keep up with shows as a
// fleet time well above the floor; a lower speed then measures closer.
//
//	go test -run '^$' -bench HetznerFleetBudget -benchtime 1x -timeout 2h ./services/reconciler/
func BenchmarkHetznerFleetBudget(b *testing.B) {
	fast := float64(bustest.EnvInt("COMPUTE_BENCH_CLOCK_SPEED", 50))
	var fleets []int
	for _, f := range strings.Split(envString("COMPUTE_BENCH_FLEETS", "1000,10000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("COMPUTE_BENCH_FLEETS: %q is not a fleet size", f)
		}
		fleets = append(fleets, n)
	}
	const burst, refill = emulator.DefaultRateLimitSize, emulator.DefaultRateLimitRefillPerSecond
	floor := func(r fleetRun) time.Duration {
		return time.Duration(float64(max(r.calls-burst, 0)) / refill * float64(time.Second))
	}
	for b.Loop() {
		for _, n := range fleets {
			speed := fast
			if 2*n <= burst {
				speed = 1
			}
			simulated := func(r fleetRun) time.Duration {
				return time.Duration(r.elapsed.Seconds() * speed * float64(time.Second))
			}
			before := runHetznerFleetAt(b, n, 0, burst, refill, speed)
			after := runHetznerFleetAt(b, n, hetzner.DefaultBatchWindow, burst, refill, speed)
			for _, row := range []struct {
				what string
				run  fleetRun
			}{{"before", before}, {"after", after}} {
				b.Logf("%6d instances, %s: %d requests (%.2f per instance, %d refused), fleet time %v simulated (wall %v x %.0f); budget floor %v",
					n, row.what, row.run.calls, float64(row.run.calls)/float64(n), row.run.limited,
					simulated(row.run).Round(time.Second), row.run.elapsed.Round(10*time.Millisecond), speed, floor(row.run).Round(time.Second))
			}
			ratio := after.elapsed.Seconds() / before.elapsed.Seconds()
			b.Logf("%6d instances: fleet time after / before %.2f", n, ratio)
			b.ReportMetric(ratio, fmt.Sprintf("fleet-time-ratio-%d", n))
		}
	}
}
