package reconciler

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	hetzner "better-compute.io/compute/services/provider-hetzner"
)

// BenchmarkAccountFairness is BenchmarkTenantFairness within one tenant:
// how long one instance of acme on a second Hetzner account takes to run
// alone, then again right after acme had a flood of creates accepted on
// its first account, all on the Hetzner emulator with a latency on every
// API call; it reports the ratio. Run it once: go test -run '^$' -bench
// AccountFairness -benchtime 1x ./services/reconciler/ with
// COMPUTE_BENCH_INSTANCES (the flood, default 5000),
// COMPUTE_BENCH_LATENCY per API call (default 2s), COMPUTE_BENCH_ACTION
// (default 1s), COMPUTE_BENCH_WORKERS (reconcile workers, default the
// production default). It does not wait for the flood to converge.
func BenchmarkAccountFairness(b *testing.B) {
	n := bustest.EnvInt("COMPUTE_BENCH_INSTANCES", 5000)
	latency := envDuration("COMPUTE_BENCH_LATENCY", 2*time.Second)
	action := envDuration("COMPUTE_BENCH_ACTION", time.Second)
	o := Options{Logger: zerolog.Nop(), ReconcileWorkers: bustest.EnvInt("COMPUTE_BENCH_WORKERS", 0), ResyncInterval: -1}
	for b.Loop() {
		h := newHarness(b, o)
		emu := latentHetzner(b, h, latency, action)
		second := h.writePool(tenant, hetzner.ProviderID, "hz-b", map[string]any{"token": "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "location": "fsn1"},
			api.Flavor{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"})
		running := h.runningEvents(tenant)
		timeToRun := func() time.Duration {
			start := time.Now()
			h.waitRunning(running, h.create(api.InstanceCreateRequest{PoolID: second.ID}).ID, 15*time.Minute)
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
		b.Logf("acme's instance on its second account: running after %v alone, after %v behind %d creates on its first (accepted in %v): ratio %.2f; %v per API call",
			alone.Round(time.Millisecond), flooded.Round(time.Millisecond), n, accepted.Round(time.Millisecond),
			flooded.Seconds()/alone.Seconds(), latency)
		h.rec.Stop() // before the emulator goes: the flood is not waited for
		_ = emu.Close()
	}
}
