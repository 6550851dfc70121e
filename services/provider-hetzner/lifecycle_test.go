package hetzner

import (
	"context"
	"fmt"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// Lifecycle steps whose HTTP requests are counted.
const (
	stepCreateToRunning = "create-to-running"
	stepPowerOff        = "power-off"
	stepPowerOn         = "power-on"
	stepReinstall       = "reinstall"
	stepDelete          = "delete"
)

var lifecycleSteps = []string{stepCreateToRunning, stepPowerOff, stepPowerOn, stepReinstall, stepDelete}

// lifecycleCalls drives one machine through its life as the reconciler
// does (create, then one get once the create action is over, power off,
// power on, reinstall, delete) and returns the API requests of each step,
// read from the emulator's counters.
func lifecycleCalls(tb testing.TB, e *env, key string) map[string]int {
	tb.Helper()
	ctx := context.Background()
	out := map[string]int{}
	step := func(name string, run func() error) {
		e.emu.ResetCalls()
		if err := run(); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		out[name] = e.calls()
	}
	var id string
	step(stepCreateToRunning, func() error {
		m, err := e.client.Create(ctx, e.call(key), api.MachineSpec{Name: key, OfferID: "cx23", Image: "ubuntu-24.04"})
		if err != nil {
			return err
		}
		id = m.ID
		e.clock.fake.Advance(testActionDuration) // the reconciler's next look comes later
		m, err = e.client.Get(ctx, e.call(""), id)
		if err == nil && (m == nil || m.State != api.StateRunning) {
			err = fmt.Errorf("machine is %+v, want running", m)
		}
		return err
	})
	step(stepPowerOff, func() error { return e.client.Power(ctx, e.call(""), id, api.ActionOff) })
	step(stepPowerOn, func() error { return e.client.Power(ctx, e.call(""), id, api.ActionOn) })
	step(stepReinstall, func() error {
		_, err := e.client.Reinstall(ctx, e.call(""), id, "debian-12")
		return err
	})
	step(stepDelete, func() error { return e.client.Delete(ctx, e.call(""), id) })
	e.clock.fake.Advance(testActionDuration)
	return out
}

// TestLifecycleCalls pins the API requests of every step when actions take
// one poll interval: create→running at most 3 (lookup, POST, one get).
func TestLifecycleCalls(t *testing.T) {
	want := map[string]int{stepCreateToRunning: 3, stepPowerOff: 2, stepPowerOn: 2, stepReinstall: 3, stepDelete: 1}
	got := lifecycleCalls(t, newEnv(t), "inst_life")
	for _, s := range lifecycleSteps {
		if got[s] != want[s] {
			t.Errorf("%s took %d requests, want %d", s, got[s], want[s])
		}
	}
	if got[stepCreateToRunning] > 3 {
		t.Fatalf("create→running took %d requests, the budget is 3", got[stepCreateToRunning])
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
	for _, s := range lifecycleSteps {
		b.ReportMetric(float64(total[s])/float64(i), s+"-calls")
	}
}
