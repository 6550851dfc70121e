package proxmox

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// concurrentCreateCalls makes n machines at once on one cluster (the
// emulator on the wall clock with realisticDurations; one node roomy
// enough for all), each created then, unless the create answered it
// running with its addresses, looked at once, as the reconciler does, and returns the emulator's exact request count and how long the
// slowest took.
func concurrentCreateCalls(b *testing.B, n int, mods ...func(*setup)) (int, time.Duration) {
	b.Helper()
	e := newEnv(b, append([]func(*setup){withDurations, func(su *setup) {
		su.emu.Clock = clock.Real{}
		su.emu.Nodes = []emulator.Node{{Name: testNode, CPUs: 4 * n, MemoryBytes: int64(n) * 8 << 30}}
	}}, mods...)...)
	e.emu.ResetCalls()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("inst_conc_%04d", i)
			call := e.call(key)
			call.Clock = clock.Real{}
			m, err := e.client.Create(b.Context(), call, spec(key))
			if err == nil && (m.State != api.StateRunning || m.AddressesPending) { // else the reconciler takes it as answered

				get := e.call(key)
				get.Clock = clock.Real{}
				_, err = e.client.Get(b.Context(), get, m.ID)
			}
			if err != nil {
				b.Errorf("create %s: %v", key, err)
			}
		})
	}
	wg.Wait()
	return e.calls(), time.Since(start)
}

// BenchmarkConcurrentCreateCalls prints the exact requests per
// create→running with 1, 50 and 500 creates at once on one cluster, with
// a fixed 1 s task poll of each task's own status (before) and the
// defaults, adaptive polling of a shared task list (after), in one run (wall clock, realistic task durations: about half a minute a
// create). Run once:
//
//	go test -run '^$' -bench ConcurrentCreateCalls -benchtime 1x ./services/provider-proxmox/
func BenchmarkConcurrentCreateCalls(b *testing.B) {
	poll1s := func(su *setup) { su.options = append(su.options, WithTaskPollInterval(time.Second)) }
	shared := func(su *setup) { su.options = append(su.options, WithTaskBatchWindow(DefaultTaskBatchWindow)) }
	for b.Loop() {
		for _, n := range []int{1, 50, 500} {
			before, tb := concurrentCreateCalls(b, n, poll1s)
			after, ta := concurrentCreateCalls(b, n, shared)
			b.Logf("%3d at once: poll every 1 s %.1f requests/create (%d, %v); adaptive, shared %.1f (%d, %v); ratio %.2f",
				n, float64(before)/float64(n), before, tb.Round(100*time.Millisecond),
				float64(after)/float64(n), after, ta.Round(100*time.Millisecond), float64(after)/float64(before))
			b.ReportMetric(float64(after)/float64(n), fmt.Sprintf("calls/create-%d", n))
		}
	}
}
