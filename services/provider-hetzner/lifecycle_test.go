package hetzner

import (
	"fmt"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
)

// lifecycleCalls drives one machine through its life as the reconciler
// does (create, then one get once the create action is over, power off,
// power on, reinstall, delete) and returns the API requests of each step,
// read from the emulator's counters.
func lifecycleCalls(tb testing.TB, e *env, key string) map[string]int {
	tb.Helper()
	out := map[string]int{}
	life := providertest.Lifecycle{Client: e.client, Call: e.call, Key: key, Image: "debian-12",
		Spec: api.MachineSpec{Name: key, OfferID: "cx23", Image: "ubuntu-24.04"},
		// the reconciler's next look comes later
		AfterCreate: func() { e.clock.Advance(testActionDuration) }}
	life.Run(tb, func(step string, run func()) {
		e.emu.ResetCalls()
		run()
		out[step] = e.calls()
	})
	e.clock.Advance(testActionDuration)
	return out
}

// TestLifecycleCalls pins the API requests of every step when actions take
// one poll interval: create→running at most 3 (lookup, POST, one get).
func TestLifecycleCalls(t *testing.T) {
	want := map[string]int{providertest.StepCreateToRunning: 3, providertest.StepPowerOff: 2, providertest.StepPowerOn: 2,
		providertest.StepReinstall: 3, providertest.StepDelete: 1}
	got := lifecycleCalls(t, newEnv(t), "inst_life")
	for _, s := range providertest.LifecycleSteps {
		if got[s] != want[s] {
			t.Errorf("%s took %d requests, want %d", s, got[s], want[s])
		}
	}
	if got[providertest.StepCreateToRunning] > 3 {
		t.Fatalf("create→running took %d requests, the budget is 3", got[providertest.StepCreateToRunning])
	}
}

// BenchmarkLifecycleCalls reports the API requests per lifecycle step
// (metric "<step>-calls") next to the time per full lifecycle.
func BenchmarkLifecycleCalls(b *testing.B) {
	e := newEnv(b)
	total := map[string]int{}
	i := 0
	for b.Loop() {
		for s, n := range lifecycleCalls(b, e, fmt.Sprintf("inst_bench_%d", i)) {
			total[s] += n
		}
		i++
	}
	for _, s := range providertest.LifecycleSteps {
		b.ReportMetric(float64(total[s])/float64(i), s+"-calls")
	}
}
