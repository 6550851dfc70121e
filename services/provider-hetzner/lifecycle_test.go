package hetzner

import (
	"fmt"
	"sync"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
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

// A first attempt (the caller's word that the key was never sent) saves
// the lookup: create→running in 2 requests. Two racing first attempts of
// one key still make one server (the name is unique; the loser adopts), and
// a later attempt looks the key up and sends no POST.
func TestFirstAttemptSavesTheLookup(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	spec := api.MachineSpec{Name: "inst_first", OfferID: "cx23", Image: "ubuntu-24.04"}
	first := func() *provider.Call { c := e.call("inst_first"); c.FirstAttempt = true; return c }

	e.emu.ResetCalls()
	var wg sync.WaitGroup
	got := make([]*api.ExternalMachine, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := e.client.Create(ctx, first(), spec)
			if err != nil {
				t.Errorf("racing first attempt: %v", err)
				return
			}
			got[i] = m
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if got[0].ID != got[1].ID || len(e.emu.Servers()) != 1 {
		t.Fatalf("racing first attempts made %s and %s, emulator holds %d", got[0].ID, got[1].ID, len(e.emu.Servers()))
	}
	if n := e.emu.Calls("GET /servers"); n != 1 { // the loser's name lookup only
		t.Fatalf("first attempts sent %d key lookups, want only the loser's name lookup", n)
	}

	e.emu.ResetCalls()
	again, err := e.client.Create(ctx, e.call("inst_first"), spec)
	if err != nil || again.ID != got[0].ID || e.emu.Calls("POST /servers") != 0 || e.emu.Calls("GET /servers") != 1 {
		t.Fatalf("retry: %+v, %v; %d POSTs, %d lookups", again, err, e.emu.Calls("POST /servers"), e.emu.Calls("GET /servers"))
	}

	e.emu.ResetCalls()
	lone := api.MachineSpec{Name: "inst_lone", OfferID: "cx23", Image: "ubuntu-24.04"}
	c := e.call("inst_lone")
	c.FirstAttempt = true
	m, err := e.client.Create(ctx, c, lone)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(testActionDuration)
	if m, err = e.client.Get(ctx, e.call(""), m.ID); err != nil || m.State != api.StateRunning {
		t.Fatalf("get: %+v, %v", m, err)
	}
	if n := e.calls(); n != 2 {
		t.Fatalf("first-attempt create→running took %d requests, want 2 (POST, GET)", n)
	}
}
