package reconciler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

const childEnv = "COMPUTE_TEST_RECONCILER_CHILD_NATS"

// TestReconcilerChildProcess is not a test: it is the reconciler process
// TestCrashSafetyUnderSIGKILL starts and kills (it skips unless asked to run).
func TestReconcilerChildProcess(t *testing.T) {
	nc, st := bustest.ChildConnect(t, childEnv, "reconciler-child", "TestCrashSafetyUnderSIGKILL")
	o := fastOptions()
	o.AckWait, o.ResyncInterval = time.Second, time.Second
	o.Logger = zerolog.Nop()
	if _, err := Start(nc, st, o); err != nil {
		t.Fatal(err)
	}
	select {} // until SIGKILL
}

// childReconciler is the reconciler in a child process, for the server at
// url, to SIGKILL.
func childReconciler(url string) *bustest.Child {
	return &bustest.Child{Test: "TestReconcilerChildProcess", Env: []string{childEnv + "=" + url}}
}

// callRetry repeats a command while no reconciler answers (it is being
// restarted), as a client would: with a short timeout, since a request
// taken by a process that then dies is never answered. A delete retried
// after an unanswered attempt may find the instance already gone: done.
func (h *harness) callRetry(verb string, in, out any) error {
	deadline := time.Now().Add(60 * time.Second)
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := bus.Call(ctx, h.env.NC, bus.Command(tenant, bus.ResourceInstances, verb), in, out)
		cancel()
		if attempt > 0 && retriedAndDone(verb, err) {
			return nil
		}
		if !api.IsCode(err, api.CodeUnavailable) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// retriedAndDone reports whether an error to a retried command means the
// unanswered first attempt did land: a delete finding the instance gone, a
// one-shot operation finding itself pending.
func retriedAndDone(verb string, err error) bool {
	return verb == "delete" && api.IsCode(err, api.CodeNotFound) ||
		verb == "power" && api.IsCode(err, api.CodeInvalidState)
}

// The reconciler process is SIGKILLed at random points (at least 50 times)
// while 200 instances are created, powered off, reset and deleted; each time
// it is restarted. At the end every instance is as declared, the provider
// holds exactly one machine per live instance and none for deleted ones.
func TestCrashSafetyUnderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills 50+ processes")
	}
	const n, minKills = 200, 50
	h := newHarness(t, fastOptions())
	h.rec.Stop() // the only reconciler is the child process
	child := childReconciler(h.env.URL)
	child.Start(t)

	done := make(chan struct{})
	stop := make(chan struct{}) // closed when the test ends early
	killerDone := make(chan struct{})
	go func() { // kill at random moments until the workload is done and enough kills happened
		defer close(killerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Let each child live 150-500 ms: long enough to start (a -race
			// binary takes ~100 ms) and get work done, short enough to die
			// in the middle of it.
			time.Sleep(time.Duration(150+rand.IntN(350)) * time.Millisecond)
			child.Kill()
			select {
			case <-done:
				if child.Kills() >= minKills {
					child.Start(t)
					return
				}
			default:
			}
			child.Start(t)
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-killerDone // the killer owns the child until it returns
		child.Kill()
	})

	ids := make([]string, n)
	for i := range n {
		var inst api.Instance
		req := api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small", IdempotencyKey: fmt.Sprintf("crash-%d", i)}
		if err := h.callRetry("create", req, &inst); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		ids[i] = inst.ID
	}
	wantPower := map[string]api.Power{}
	deleted := map[string]bool{}
	for i, id := range ids {
		var err error
		switch i % 5 {
		case 1:
			wantPower[id] = api.PowerOff
			err = h.callRetry("power", api.InstancePowerRequest{ID: id, Action: api.ActionOff}, nil)
		case 2:
			err = h.callRetry("power", api.InstancePowerRequest{ID: id, Action: api.ActionReset}, nil)
		case 3:
			deleted[id] = true
			err = h.callRetry("delete", api.IDRequest{ID: id}, nil)
		}
		if err != nil {
			t.Fatalf("mutate %s: %v", id, err)
		}
	}
	close(done)
	<-killerDone
	t.Logf("reconciler SIGKILLed %d times", child.Kills())
	if k := child.Kills(); k < minKills {
		t.Fatalf("only %d kills", k)
	}

	deadline := time.Now().Add(3 * time.Minute)
	for {
		bad := h.unconverged(ids, wantPower, deleted)
		if bad == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not converged: %s", bad)
		}
		time.Sleep(100 * time.Millisecond)
	}
	byKey := h.cloud.ByKey()
	if len(byKey) != n-len(deleted) {
		t.Fatalf("provider holds %d machines for %d live instances", len(byKey), n-len(deleted))
	}
}

// unconverged describes the first instance not (yet) as declared, or "".
func (h *harness) unconverged(ids []string, wantPower map[string]api.Power, deleted map[string]bool) string {
	byKey := h.cloud.ByKey()
	for _, id := range ids {
		inst, err := h.get(id)
		if deleted[id] {
			if !api.IsCode(err, api.CodeNotFound) {
				return fmt.Sprintf("%s still exists (phase %s, err %v)", id, inst.Status.Phase, err)
			}
			if _, ok := byKey[id]; ok {
				return fmt.Sprintf("deleted %s still has a machine", id)
			}
			continue
		}
		if err != nil {
			return fmt.Sprintf("%s: %v", id, err)
		}
		phase := api.PhaseRunning
		if wantPower[id] == api.PowerOff {
			phase = api.PhaseStopped
		}
		m, ok := byKey[id]
		switch {
		case inst.Status.Phase != phase || inst.Status.ObservedGeneration != inst.Generation:
			return fmt.Sprintf("%s is %s gen %d/%d, want %s", id, inst.Status.Phase, inst.Status.ObservedGeneration, inst.Generation, phase)
		case !ok || inst.Status.Machine == nil || inst.Status.Machine.ID != m.ID:
			return fmt.Sprintf("%s machine %+v, provider has %+v", id, inst.Status.Machine, m)
		case inst.Desired.Operation != nil && (inst.Status.LastOperation == nil || inst.Status.LastOperation.ID != inst.Desired.Operation.ID):
			return fmt.Sprintf("%s operation %s not run", id, inst.Desired.Operation.ID)
		}
	}
	return ""
}
