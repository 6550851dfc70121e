package reconciler

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// BenchmarkFleetConvergence creates a fleet on the Hetzner emulator at once
// and measures the time until every instance runs and the HTTP calls per
// instance, next to the minimum the API allows: every instance's critical
// path (create POST, the create action, one GET) with unlimited parallelism.
// Run it once: go test -run '^$' -bench FleetConvergence -benchtime 1x
// ./services/reconciler/ with COMPUTE_BENCH_INSTANCES (default 1000),
// COMPUTE_BENCH_LATENCY per API call (default 0), COMPUTE_BENCH_ACTION
// (default 1s), COMPUTE_BENCH_WORKERS (reconcile workers, default the production default). The
// emulator's rate limit is lifted: docs/benchmarks.md computes the bound
// Hetzner's budget puts on top.
func BenchmarkFleetConvergence(b *testing.B) {
	n := bustest.EnvInt("COMPUTE_BENCH_INSTANCES", 1000)
	latency := envDuration("COMPUTE_BENCH_LATENCY", 0)
	action := envDuration("COMPUTE_BENCH_ACTION", time.Second)
	o := Options{Logger: zerolog.Nop(), ReconcileWorkers: bustest.EnvInt("COMPUTE_BENCH_WORKERS", 0), ResyncInterval: -1}
	for b.Loop() {
		h := newHarness(b, o)
		emu := latentHetzner(b, h, latency, action)

		running := make(chan string, n)
		seen := sync.Map{}
		sub, err := h.env.NC.Subscribe(bus.Event(tenant, bus.ResourceInstances, "*", "running"), func(m *nats.Msg) {
			var ev api.Event
			if json.Unmarshal(m.Data, &ev) == nil {
				if _, dup := seen.LoadOrStore(ev.ResourceID, true); !dup {
					running <- ev.ResourceID
				}
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		h.createMany(n, fmt.Sprintf("bench-%d", time.Now().UnixNano()))
		created := time.Since(start)
		for range n {
			select {
			case <-running:
			case <-time.After(10 * time.Minute):
				b.Fatalf("fleet did not converge")
			}
		}
		elapsed := time.Since(start)
		_ = sub.Unsubscribe()
		calls := sumCalls(emu.Emulator().CallCounts())
		minimum := 3*latency + action
		b.ReportMetric(elapsed.Seconds(), "s/fleet")
		b.ReportMetric(created.Seconds(), "s-to-accept")
		b.ReportMetric(float64(calls)/float64(n), "calls/instance")
		b.ReportMetric(minimum.Seconds(), "min-s")
		b.ReportMetric(elapsed.Seconds()/minimum.Seconds(), "x-min")
		b.Logf("%d instances: all running after %v (creates accepted after %v), %d API calls (%.2f per instance); API minimum %v (ratio %.1f)",
			n, elapsed.Round(time.Millisecond), created.Round(time.Millisecond), calls, float64(calls)/float64(n), minimum, elapsed.Seconds()/minimum.Seconds())
		_ = emu.Close()
	}
}

// BenchmarkTenantFairness measures how long one instance of a second tenant
// (globex) takes to run alone, then again right after the first tenant
// (acme) had a flood of creates accepted, all on the Hetzner emulator with a
// latency on every API call, and reports the ratio: what one tenant's burst
// costs everyone else. Run it once: go test -run '^$' -bench TenantFairness
// -benchtime 1x ./services/reconciler/ with COMPUTE_BENCH_INSTANCES (the
// flood, default 5000), COMPUTE_BENCH_LATENCY per API call (default 2s),
// COMPUTE_BENCH_ACTION (default 1s), COMPUTE_BENCH_WORKERS (reconcile
// workers, default the production default). It does not wait for the flood
// to converge.
func BenchmarkTenantFairness(b *testing.B) {
	n := bustest.EnvInt("COMPUTE_BENCH_INSTANCES", 5000)
	latency := envDuration("COMPUTE_BENCH_LATENCY", 2*time.Second)
	action := envDuration("COMPUTE_BENCH_ACTION", time.Second)
	o := Options{Logger: zerolog.Nop(), ReconcileWorkers: bustest.EnvInt("COMPUTE_BENCH_WORKERS", 0), ResyncInterval: -1}
	for b.Loop() {
		h := newHarness(b, o)
		emu := latentHetzner(b, h, latency, action)
		other := h.writePool(otherTenant, hetzner.ProviderID, "hz", map[string]any{"token": "secret://globex/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "location": "fsn1"},
			api.Flavor{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"})
		running := h.runningEvents(otherTenant)
		timeToRun := func() time.Duration {
			start := time.Now()
			h.waitRunning(running, h.createAs(otherTenant, other).ID, 15*time.Minute)
			return time.Since(start)
		}
		alone := timeToRun()
		start := time.Now()
		h.createMany(n, fmt.Sprintf("flood-%d", time.Now().UnixNano()))
		accepted := time.Since(start)
		flooded := timeToRun()
		b.ReportMetric(alone.Seconds(), "s-alone")
		b.ReportMetric(flooded.Seconds(), "s-flooded")
		b.ReportMetric(flooded.Seconds()/alone.Seconds(), "x-alone")
		b.Logf("%s's instance: running after %v alone, after %v behind %s's %d creates (accepted in %v): ratio %.2f; %v per API call",
			otherTenant, alone.Round(time.Millisecond), flooded.Round(time.Millisecond), tenant, n, accepted.Round(time.Millisecond),
			flooded.Seconds()/alone.Seconds(), latency)
		h.rec.Stop() // before the emulator goes: the flood is not waited for
		_ = emu.Close()
	}
}

// latentHetzner starts a Hetzner emulator whose rate limit is lifted, whose
// actions take action and whose server routes answer after latency, and
// makes it h's pool's account.
func latentHetzner(b *testing.B, h *harness, latency, action time.Duration) *emulator.Server {
	b.Helper()
	emu, err := emulator.Start(emulator.Options{RateLimitSize: 10_000_000, RateLimitRefillPerSecond: 1_000_000, ActionDuration: action}, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	for _, route := range []string{"GET /servers", "POST /servers", "GET /servers/{id}"} {
		emu.Emulator().SetLatency(route, latency)
	}
	h.pool = h.addHetznerPool(emu, nil)
	return emu
}
