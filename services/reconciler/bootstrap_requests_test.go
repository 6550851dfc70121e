package reconciler

import (
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

// robotRequests counts the emulator's calls by Robot's limit classes:
// the server endpoints (GET /server, GET/POST /server/{n}: 200 an hour),
// GET /reset/{n} (500 an hour) and all of them.
func robotRequests(calls []string) (server, resetGet, all int) {
	for _, c := range calls {
		switch {
		case strings.HasPrefix(c, "GET /server"), strings.HasPrefix(c, "POST /server/"):
			server++
		case strings.HasPrefix(c, "GET /reset/"):
			resetGet++
		}
	}
	return server, resetGet, len(calls)
}

// TestBootstrapRobotRequests bootstraps 5 servers of one account at once,
// each rescue boot and reboot taking bootDelay before SSH answers, and
// prints the Robot requests they took (the emulator's calls) by limit
// class. A waiting bootstrap probes SSH on every pass but reads the
// server from Robot only at BootstrapOptions.ReadInterval, doubling: the
// server endpoints' requests of a bootstrap stay within the ones its
// steps make plus those reads.
func TestBootstrapRobotRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for 5 bootstraps with boot delays")
	}
	// At 1/100 of real time: a 2 s poll interval, a boot of 2.5 min, the
	// default reads (30 s, at most 10 min apart).
	const bootDelay = 1500 * time.Millisecond
	o := fastOptions()
	o.Bootstrap.ReadInterval, o.Bootstrap.MaxReadInterval = 300*time.Millisecond, 6*time.Second
	w := newRobotWorldBooting(t, o, bootDelay)
	servers := []int{101, 104, 105, 106, 107}
	for _, n := range servers[1:] {
		if err := w.emu.AddServer(emulator.ServerSpec{Number: n}); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]string, len(servers))
	var wg sync.WaitGroup
	for i, n := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := w.bootstrap(n)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = inst.ID
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	begin := time.Now()
	for _, id := range ids {
		if b := w.waitConfigured(id).Status.Bootstrap; b.Rescues != 1 || b.Installs != 1 {
			t.Fatalf("bootstrap %+v, want 1 rescue boot and 1 install", b)
		}
	}
	server, resetGet, all := robotRequests(w.emu.Calls())
	t.Logf("5 bootstraps (boot delay %s, poll interval %s, %.1fs): Robot requests: server endpoints %d (%.1f per bootstrap), "+
		"GET /reset %d, all %d", bootDelay, o.PollInterval, time.Since(begin).Seconds(), server, float64(server)/5, resetGet, all)
	// A bootstrap's steps make 5 server requests (claim: 3, rescue: 1,
	// reboot: 1) and the passes after Ready about 2; each wait reads a
	// few times (log2 of the wait over ReadInterval). Reading on every
	// pass took 15 a bootstrap here.
	if perBootstrap := float64(server) / 5; perBootstrap > 12 {
		t.Fatalf("%.1f server requests a bootstrap: the waits read the server on every pass", perBootstrap)
	}
}

// TestBootstrapReadDue: a waiting bootstrap reads the server
// ReadInterval after its step began, then at doubling intervals up to
// MaxReadInterval; any other pass reads it every time.
func TestBootstrapReadDue(t *testing.T) {
	since := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := since.Add(d); return &v }
	waiting := func(step api.BootstrapStep, state api.StepState, readAt *time.Time) *api.Instance {
		return &api.Instance{Bootstrap: &api.BootstrapSpec{ServerNumber: 101}, Status: api.InstanceStatus{
			Machine:   &api.ExternalMachine{ID: "101"},
			Bootstrap: &api.BootstrapStatus{Step: step, State: state, Since: since, ReadAt: readAt}}}
	}
	pending := waiting(api.BootstrapWaitRescue, api.StepWaiting, nil)
	pending.Desired.Operation = &api.Operation{ID: "op_1", Action: api.ActionReinstall}
	for _, tc := range []struct {
		name string
		inst *api.Instance
		now  time.Duration // after since
		want bool
	}{
		{"no bootstrap", &api.Instance{Status: api.InstanceStatus{Machine: &api.ExternalMachine{ID: "1"}}}, 0, true},
		{"wait rescue, before the first read", waiting(api.BootstrapWaitRescue, api.StepWaiting, nil), 29 * time.Second, false},
		{"wait rescue, first read", waiting(api.BootstrapWaitRescue, api.StepWaiting, nil), 30 * time.Second, true},
		{"read at 30 s: next at 60 s", waiting(api.BootstrapWaitRescue, api.StepWaiting, at(30*time.Second)), 59 * time.Second, false},
		{"read at 30 s: 60 s", waiting(api.BootstrapWaitRescue, api.StepWaiting, at(30*time.Second)), 60 * time.Second, true},
		{"read at 2 min: next at 4 min", waiting(api.BootstrapWaitSystem, api.StepWaiting, at(2*time.Minute)), 239 * time.Second, false},
		{"read at 2 min: 4 min", waiting(api.BootstrapWaitSystem, api.StepWaiting, at(2*time.Minute)), 4 * time.Minute, true},
		{"read at 1 h: at most 10 min apart", waiting(api.BootstrapWaitSystem, api.StepWaiting, at(time.Hour)), 70 * time.Minute, true},
		{"install to run again", waiting(api.BootstrapInstall, api.StepFailed, nil), time.Second, false},
		{"install running", waiting(api.BootstrapInstall, api.StepRunning, nil), time.Second, true},
		{"rescue step", waiting(api.BootstrapRescue, api.StepWaiting, nil), time.Second, true},
		{"ready", waiting(api.BootstrapReady, api.StepSucceeded, nil), time.Second, true},
		{"operation pending", pending, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Clock: clock.NewFake(since.Add(tc.now))}
			o.Bootstrap.defaults()
			r := &Reconciler{o: o}
			if got := r.bootstrapReadDue(tc.inst); got != tc.want {
				t.Fatalf("bootstrapReadDue = %v, want %v", got, tc.want)
			}
		})
	}
}
