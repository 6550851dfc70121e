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
// with realistic task durations and the default polling (adaptive, see
// taskPacer): the first lifecycle on an account learns the task types'
// durations, the second polls each task about once. A fixed 1 s poll
// (WithTaskPollInterval) costs one request per second a task runs.
func TestLifecycleCalls(t *testing.T) {
	// Requests besides task polls: create→running: cluster list, template
	// config, nodes (placement), clone, config, POST config, resize, start,
	// PUT config (the tag, last); then get: config, status, agent (12). Power off: config,
	// stop (2); on: config, start (2). Reinstall: config, cluster list,
	// template config, DELETE (refused: running), stop, DELETE, clone,
	// config, POST config, resize, start, PUT config (12). Delete: config,
	// DELETE (refused), stop, DELETE (4).
	fixed := map[string]stepCost{
		// polls: clone 20, config 1, resize 2, start 3.
		providertest.StepCreateToRunning: {38, 26 * time.Second},
		providertest.StepPowerOff:        {4, 2 * time.Second},
		providertest.StepPowerOn:         {5, 3 * time.Second},
		providertest.StepReinstall:       {45, 33 * time.Second},
		providertest.StepDelete:          {11, 7 * time.Second},
	}
	learned := map[string]stepCost{
		// 6 polls for the four tasks: a type whose estimate (the midpoint
		// of two polls) is still short of its duration takes two.
		providertest.StepCreateToRunning: {18, 27*time.Second + 250*time.Millisecond},
		providertest.StepPowerOff:        {3, 2 * time.Second},
		providertest.StepPowerOn:         {3, 3 * time.Second},
		providertest.StepReinstall:       {18, 35 * time.Second},
		providertest.StepDelete:          {6, 8 * time.Second},
	}
	var mu sync.Mutex
	counted := map[string]int{}
	counter := WithCallCounter(func(op string, n int) {
		mu.Lock()
		defer mu.Unlock()
		counted[op] += n
	})
	poll1s := func(su *setup) { su.options = append(su.options, WithTaskPollInterval(time.Second)) }
	got := lifecycleCosts(t, newEnv(t, withDurations, poll1s, func(su *setup) { su.options = append(su.options, counter) }), "inst_life")
	mu.Lock()
	if counted["create"]+counted["get"] != got[providertest.StepCreateToRunning].calls || counted["reinstall"] != got[providertest.StepReinstall].calls ||
		counted["power"] != got[providertest.StepPowerOff].calls+got[providertest.StepPowerOn].calls || counted["delete"] != got[providertest.StepDelete].calls {
		t.Errorf("the call counter saw %v, the emulator %v", counted, got)
	}
	mu.Unlock()
	adaptive := newEnv(t, withDurations)
	first := lifecycleCosts(t, adaptive, "inst_life_1")
	second := lifecycleCosts(t, adaptive, "inst_life_2")
	var report strings.Builder
	fmt.Fprintf(&report, "%-18s %18s %18s %18s\n", "step", "poll every 1 s", "adaptive, first", "adaptive, learned")
	for _, s := range providertest.LifecycleSteps {
		fmt.Fprintf(&report, "%-18s %3d req %10s %3d req %10s %3d req %10s\n", s,
			got[s].calls, got[s].emulated, first[s].calls, first[s].emulated, second[s].calls, second[s].emulated)
		if got[s] != fixed[s] {
			t.Errorf("%s at 1 s took %d requests and %s, want %d and %s", s, got[s].calls, got[s].emulated, fixed[s].calls, fixed[s].emulated)
		}
		if second[s] != learned[s] {
			t.Errorf("%s, learned, took %d requests and %s, want %d and %s", s, second[s].calls, second[s].emulated, learned[s].calls, learned[s].emulated)
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
