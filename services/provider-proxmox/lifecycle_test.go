package proxmox

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/provider/providertest"
)

// stepCost is what one lifecycle step took: API requests, and time on the
// emulator's clock (task durations and poll intervals).
type stepCost struct {
	calls    int
	emulated time.Duration
}

// lifecycleCosts drives one machine through its life as the reconciler
// does (create, then get until running; power off; power on; reinstall;
// delete) and returns each step's cost.
func lifecycleCosts(tb testing.TB, e *env, key string) map[string]stepCost {
	tb.Helper()
	out := map[string]stepCost{}
	life := providertest.Lifecycle{Client: e.client, Call: e.call, Key: key, Spec: spec(key), Image: testTemplate2}
	life.Run(tb, func(step string, run func()) {
		e.emu.ResetCalls()
		start := e.clock.Now()
		run()
		out[step] = stepCost{calls: e.calls(), emulated: e.clock.Now().Sub(start)}
	})
	return out
}

// TestLifecycleCalls pins the requests and emulated time of every step
// with realistic task durations and the default 1 s poll interval: most
// requests are task polls (one per second a task runs).
func TestLifecycleCalls(t *testing.T) {
	want := map[string]stepCost{
		// cluster list, template config, clone + 20 polls, config, POST
		// config + 1 poll, resize + 2 polls, start + 3 polls, PUT config
		// (the tag, last); then get: config, status, agent.
		providertest.StepCreateToRunning: {37, 26 * time.Second},
		// config, stop + 2 polls.
		providertest.StepPowerOff: {4, 2 * time.Second},
		// config, start + 3 polls.
		providertest.StepPowerOn: {5, 3 * time.Second},
		// config, cluster list, template config, DELETE (refused:
		// running), stop + 2 polls, DELETE + 5 polls, clone + 20 polls,
		// config, POST config + 1 poll, resize + 2 polls (the 8 GiB
		// template to the kept 20), start + 3 polls, PUT config (tags).
		providertest.StepReinstall: {45, 33 * time.Second},
		// config, DELETE (refused: running), stop + 2 polls, DELETE + 5 polls.
		providertest.StepDelete: {11, 7 * time.Second},
	}
	var mu sync.Mutex
	counted := map[string]int{}
	counter := WithCallCounter(func(op string, n int) {
		mu.Lock()
		defer mu.Unlock()
		counted[op] += n
	})
	got := lifecycleCosts(t, newEnv(t, withDurations, func(su *setup) { su.options = append(su.options, counter) }), "inst_life")
	mu.Lock()
	defer mu.Unlock()
	if counted["create"]+counted["get"] != got[providertest.StepCreateToRunning].calls || counted["reinstall"] != got[providertest.StepReinstall].calls ||
		counted["power"] != got[providertest.StepPowerOff].calls+got[providertest.StepPowerOn].calls || counted["delete"] != got[providertest.StepDelete].calls {
		t.Errorf("the call counter saw %v, the emulator %v", counted, got)
	}
	var report strings.Builder
	for _, s := range providertest.LifecycleSteps {
		fmt.Fprintf(&report, "%-18s %3d requests %6s emulated\n", s, got[s].calls, got[s].emulated)
		if got[s] != want[s] {
			t.Errorf("%s took %d requests and %s, want %d and %s", s, got[s].calls, got[s].emulated, want[s].calls, want[s].emulated)
		}
	}
	t.Logf("lifecycle with realistic task durations:\n%s", report.String())
}

// BenchmarkLifecycle reports per lifecycle step the API requests
// ("<step>-calls") and the emulated wall time ("<step>-emulated-s": task
// durations and poll intervals on the fake clock), next to the real time
// per full lifecycle, and prints them as a table.
func BenchmarkLifecycle(b *testing.B) {
	e := newEnv(b, withDurations)
	total := map[string]stepCost{}
	i := 0
	for b.Loop() {
		for s, c := range lifecycleCosts(b, e, fmt.Sprintf("inst_bench_%d", i)) {
			total[s] = stepCost{calls: total[s].calls + c.calls, emulated: total[s].emulated + c.emulated}
		}
		i++
	}
	var report strings.Builder
	for _, s := range providertest.LifecycleSteps {
		calls, emulated := float64(total[s].calls)/float64(i), total[s].emulated.Seconds()/float64(i)
		b.ReportMetric(calls, s+"-calls")
		b.ReportMetric(emulated, s+"-emulated-s")
		fmt.Fprintf(&report, "%-18s %5.1f requests %6.1f s emulated\n", s, calls, emulated)
	}
	b.Logf("per lifecycle step (task durations %v, poll %s):\n%s", realisticDurations(), DefaultTaskPollInterval, report.String())
}
