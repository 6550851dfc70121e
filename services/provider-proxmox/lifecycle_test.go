package proxmox

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
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
	// Requests besides task polls (TestLoneCreateRequests lists a
	// create's): create→running: cluster list (guests and nodes), template
	// config (not on a learned account: templateCache), clone, PUT config,
	// resize, start, PUT config (the tag, last), the agent's addresses (8;
	// the create answers running: no get). Power off: config, stop (2);
	// on: config, start (2). Reinstall: config, cluster list, template
	// config (not when learned), DELETE (refused: running), stop, DELETE,
	// clone, PUT config, resize, start, PUT config (11). Delete: config,
	// DELETE (refused), stop, DELETE (4).
	fixed := map[string]stepCost{
		// polls: clone 20, resize 2, start 3.
		providertest.StepCreateToRunning: {33, 25 * time.Second},
		providertest.StepPowerOff:        {4, 2 * time.Second},
		providertest.StepPowerOn:         {5, 3 * time.Second},
		providertest.StepReinstall:       {43, 32 * time.Second},
		providertest.StepDelete:          {11, 7 * time.Second},
	}
	learned := map[string]stepCost{
		// One poll per task (3 for create); reinstall's stop, destroy,
		// clone, resize and start (5); no template config read (cached).
		providertest.StepCreateToRunning: {10, 26 * time.Second},
		providertest.StepPowerOff:        {3, 2 * time.Second},
		providertest.StepPowerOn:         {3, 3 * time.Second},
		providertest.StepReinstall:       {15, 34 * time.Second},
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

// TestLoneCreateRequests lists, from the emulator's call log, every
// request of one create→running on an account whose task durations are
// learned (one lifecycle before): ten, all the create's (the one cluster
// list serves slots, template and placement; the template's config is the
// one the account read before, templateCache, and the clone's is derived
// from it, clonedConfig; the configuration is a synchronous PUT; one poll
// per task; the tag last; then the guest agent's addresses: the create
// answers the machine running with them, so the reconciler sends no get).
func TestLoneCreateRequests(t *testing.T) {
	e := newEnv(t, withDurations)
	lifecycleCosts(t, e, "inst_learn")
	want := []string{
		emulator.RouteClusterResources, // slots, template, nodes (the template's config is cached)
		emulator.RouteClone, emulator.RouteTaskStatus,
		emulator.RouteConfigPut, // cores, memory, ipconfig0, …
		emulator.RouteResize, emulator.RouteTaskStatus,
		emulator.RouteStart, emulator.RouteTaskStatus,
		emulator.RouteConfigPut,       // the tag, last
		emulator.RouteAgentInterfaces, // the addresses the create answers with
	}
	life := providertest.Lifecycle{Client: e.client, Call: e.call, Key: "inst_lone", Spec: spec("inst_lone"), Image: testTemplate2}
	life.Run(t, func(step string, run func()) {
		e.emu.ResetCalls()
		run()
		if step != providertest.StepCreateToRunning {
			return
		}
		got := e.emu.CallLog()
		if !slices.Equal(got, want) {
			t.Errorf("create→running sent %d requests:\n  %s\nwant %d:\n  %s", len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
		}
	})
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
