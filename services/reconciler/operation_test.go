package reconciler

import (
	"context"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// opDone waits until operation opID of instance id succeeded.
func (h *harness) opDone(id, opID string) *api.Instance {
	h.t.Helper()
	return h.waitFor(id, "operation "+opID+" succeeded", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.LastOperation != nil && i.Status.LastOperation.ID == opID && i.Status.LastOperation.State == api.OperationSucceeded
	})
}

// updateRecord changes the instance record directly (CAS), as another
// pass or replica would have.
func (h *harness) updateRecord(id string, change func(*api.Instance)) {
	h.t.Helper()
	if _, _, err := h.env.Stores.InstanceTable().Mutate(context.Background(), tenant, id, func(rec *api.Instance) error {
		change(rec)
		return nil
	}); err != nil {
		h.t.Fatal(err)
	}
}

// A pass that read the record while operation 1 was pending, and stalled
// in the provider until operation 1 and then operation 2 had run, never
// sends operation 1 again, nor makes operation 2 run twice.
func TestStalePassNeverRerunsAFinishedOperation(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{})
	h.waitPhase(inst.ID, api.PhaseRunning)
	base := h.cloud.Calls(provider.VerbPower)

	hold := h.cloud.HoldNext(provider.VerbGet) // the pass of operation 1's work stalls in its get
	var out api.Instance
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, &out); err != nil {
		t.Fatal(err)
	}
	op1 := out.Desired.Operation.ID
	<-hold.Held
	if _, err := h.rec.Resync(context.Background()); err != nil { // another pass runs operation 1
		t.Fatal(err)
	}
	h.opDone(inst.ID, op1)
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionGracefulRestart}, &out); err != nil {
		t.Fatal(err)
	}
	op2 := out.Desired.Operation.ID
	h.opDone(inst.ID, op2)
	close(hold.Release)
	h.waitFor(inst.ID, "settled after the stale pass", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.LastOperation != nil && i.Status.LastOperation.ID == op2 &&
			i.Status.LastOperation.State == api.OperationSucceeded && i.Status.ObservedGeneration == i.Generation
	})
	if _, err := h.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // many passes of fastOptions
	if got := h.cloud.Calls(provider.VerbPower) - base; got != 2 {
		t.Fatalf("reset and graceful-restart were requested once each; the provider got %d power calls", got)
	}
}

// A pass that saw an operation Executing and resumes after its lease ran
// out does not overwrite the outcome the claiming pass recorded meanwhile.
func TestStalePassNeverOverwritesAnOutcome(t *testing.T) {
	opts := fastOptions()
	opts.CallTimeout = time.Second
	h := newHarness(t, opts)
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{}).ID, api.PhaseRunning)
	h.rec.Stop() // only the pass below runs

	started := h.clock.Now().UTC().Add(-opts.CallTimeout - claimMargin + 300*time.Millisecond) // 0.3 s of lease left
	op := &api.Operation{ID: api.NewID(api.PrefixOperation), Action: api.ActionReset, RequestedAt: started}
	h.updateRecord(inst.ID, func(r *api.Instance) {
		r.Desired.Operation = op
		r.Status.LastOperation = &api.OperationStatus{ID: op.ID, Action: op.Action, State: api.OperationExecuting, StartedAt: started}
	})
	if held := h.rec.operationLease(h.record(inst.ID)); held <= 0 {
		t.Fatalf("the claim's lease already ran out")
	}
	h.clock.Advance(400 * time.Millisecond) // the lease ran out: this pass goes on
	hold := h.cloud.HoldNext(provider.VerbGet)
	done := make(chan error, 1)
	go func() {
		_, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, inst.ID)
		done <- err
	}()
	<-hold.Held
	h.updateRecord(inst.ID, func(r *api.Instance) { // the claiming pass records its outcome
		now := time.Now().UTC()
		r.Status.LastOperation.State, r.Status.LastOperation.FinishedAt = api.OperationSucceeded, &now
	})
	close(hold.Release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := h.record(inst.ID)
	if got.Status.LastOperation.State != api.OperationSucceeded {
		t.Fatalf("recorded outcome became %+v, want Succeeded kept", got.Status.LastOperation)
	}
}

// While an operation executes, other passes leave the machine alone: a
// reinstall's machine may read as absent (Proxmox re-clones into the
// VMID), which must neither re-create it nor let a delete forget it.
func TestNoPassActsOnTheMachineDuringAnOperation(t *testing.T) {
	opts := fastOptions()
	opts.CallTimeout = 3 * time.Second
	for _, then := range []string{"resync", "delete"} {
		t.Run(then, func(t *testing.T) {
			h := newHarness(t, opts)
			inst := h.create(api.InstanceCreateRequest{})
			m1 := h.waitPhase(inst.ID, api.PhaseRunning).Status.Machine.ID
			h.cloud.SetHung(provider.VerbReinstall, true)
			var out api.Instance
			if err := h.call("reinstall", api.InstanceReinstallRequest{ID: inst.ID, Image: "debian-11"}, &out); err != nil {
				t.Fatal(err)
			}
			op := out.Desired.Operation.ID
			h.waitFor(inst.ID, "reinstall executing", func(i *api.Instance, err error) bool {
				return err == nil && i.Status.LastOperation != nil && i.Status.LastOperation.ID == op && i.Status.LastOperation.State == api.OperationExecuting
			})
			h.cloud.Remove(m1) // mid-reinstall the machine reads as absent
			if then == "resync" {
				if _, err := h.rec.Resync(context.Background()); err != nil {
					t.Fatal(err)
				}
			} else if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second) // many passes of fastOptions, all inside the reinstall's lease
			cur, err := h.get(inst.ID)
			if err != nil {
				t.Fatalf("the record is gone while reinstall %s of machine %s still ran: %v", op, m1, err)
			}
			if creates := h.cloud.Calls(provider.VerbCreate); creates != 1 || cur.Status.Machine == nil || cur.Status.Machine.ID != m1 {
				t.Fatalf("during the reinstall: %d creates, machine %+v; want 1 and %s", creates, cur.Status.Machine, m1)
			}
		})
	}
}

// A repeated delete queues the instance's work again: a client retrying
// because the first delete's work was lost, or to resume a deletion that
// failed, is not left waiting for the periodic resync.
func TestRepeatedDeleteQueuesWorkAgain(t *testing.T) {
	t.Run("lost work", func(t *testing.T) {
		h := newHarness(t, fastOptions(), startAPI)
		inst := h.create(api.InstanceCreateRequest{})
		if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
			t.Fatal(err)
		}
		work, err := h.env.Stores.JS.Stream(context.Background(), bus.StreamWork)
		if err != nil {
			t.Fatal(err)
		}
		if err := work.Purge(context.Background()); err != nil { // the lost work message
			t.Fatal(err)
		}
		h.rec = h.startReconciler(h.env.Connect(t))
		// the repeated delete reaches the consuming replica: one that
		// consumes no work queues without a consumer of the tenant's work
		if err := h.api.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
			t.Fatal(err)
		}
		h.waitGone(inst.ID)
	})
	t.Run("failed deletion", func(t *testing.T) {
		h := newHarness(t, fastOptions())
		inst := h.create(api.InstanceCreateRequest{})
		h.waitPhase(inst.ID, api.PhaseRunning)
		refusal := api.ProviderError(400, "invalid_parameter", "parameter verification failed")
		refusal.Details.Permanent = true
		h.cloud.FailNext(provider.VerbDelete, refusal)
		if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
			t.Fatal(err)
		}
		h.waitPhase(inst.ID, api.PhaseFailed)
		if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
			t.Fatal(err)
		}
		h.waitGone(inst.ID)
		if n := len(h.cloud.Machines()); n != 0 {
			t.Fatalf("%d machines left", n)
		}
	})
}

// graceful-off asks the guest to shut down and keeps it off: no hard
// power-off while it stops by itself within GracefulOffTimeout, no drift
// when it has; a guest still running after that is powered off hard.
func TestGracefulOffStaysOff(t *testing.T) {
	for _, stopsInTime := range []bool{true, false} {
		opts := fastOptions()
		opts.GracefulOffTimeout = time.Hour
		h := newHarness(t, opts)
		h.cloud.AsyncShutdown = true
		inst := h.create(api.InstanceCreateRequest{})
		m := h.waitPhase(inst.ID, api.PhaseRunning).Status.Machine.ID
		drifts, err := h.env.NC.SubscribeSync(bus.Event(tenant, bus.ResourceInstances, inst.ID, "drift"))
		if err != nil {
			t.Fatal(err)
		}
		var out api.Instance
		if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionGracefulOff}, &out); err != nil {
			t.Fatal(err)
		}
		if out.Desired.Power != api.PowerOff {
			t.Fatalf("graceful-off left desired power %q, want off", out.Desired.Power)
		}
		h.opDone(inst.ID, out.Desired.Operation.ID)
		if stopsInTime {
			time.Sleep(500 * time.Millisecond) // the guest takes its time
			if got := h.cloud.Calls(provider.VerbPower); got != 1 {
				t.Fatalf("%d power calls while the guest shut down, want 1 (the graceful-off)", got)
			}
			h.cloud.SetState(m, api.StateStopped)
		} else {
			h.clock.Advance(opts.GracefulOffTimeout) // the guest never stops by itself
		}
		h.waitPhase(inst.ID, api.PhaseStopped)
		want := 1
		if !stopsInTime {
			want = 2 // the graceful-off, then the hard off
		}
		if got := h.cloud.Calls(provider.VerbPower); got != want {
			t.Fatalf("stops in time %v: %d power calls, want %d", stopsInTime, got, want)
		}
		if msg, err := drifts.NextMsg(200 * time.Millisecond); err == nil {
			t.Fatalf("a requested graceful-off was reported as drift: %s", msg.Data)
		}
	}
}

// Stop of an idle replica returns at once: only running passes are waited
// for (the resync loop is not one), not the whole drain allowance.
func TestStopOfAnIdleReplicaDoesNotWaitOutTheDrain(t *testing.T) {
	opts := fastOptions()
	opts.CallTimeout, opts.ResyncInterval = time.Hour, time.Hour
	h := newHarness(t, fastOptions())
	h.opts = opts
	rec := h.startReconciler(h.env.Connect(t))
	stopped := make(chan struct{})
	go func() { rec.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stop of an idle replica waited for the drain allowance (CallTimeout)")
	}
}

// A replica whose tenant's work consumer goes (here: deleted; also lost
// with a whole cluster's store) sets it up again and consumes, instead of
// serving the API only.
func TestConsumingResumesAfterTheConsumerEnds(t *testing.T) {
	h := newHarness(t, fastOptions())
	h.waitPhase(h.create(api.InstanceCreateRequest{}).ID, api.PhaseRunning)
	if err := h.env.Stores.JS.DeleteConsumer(context.Background(), bus.StreamWork, WorkConsumer(tenant, h.pool.ProviderAccountID)); err != nil {
		t.Fatal(err)
	}
	h.waitPhase(h.create(api.InstanceCreateRequest{}).ID, api.PhaseRunning)
}
