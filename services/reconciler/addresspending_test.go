package reconciler

import (
	"context"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

// readyReason is the reason of the instance's Ready condition ("" when
// it has none).
func readyReason(i *api.Instance) api.ConditionReason {
	if c := condition(i, api.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// A machine that runs but whose addresses are pending (a Proxmox VE VM
// whose guest agent is not up yet) is not configured and not Ready: the
// reconciler looks again with growing delays, and once the addresses are
// known it configures the machine, once, and reports it Ready.
func TestConfigureWaitsForPendingAddresses(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	w.cloud.SetAddressesPending(true)
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Script: "echo configured $COMPUTE_GENERATION"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitFor(inst.ID, "running with addresses pending", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Machine != nil && readyReason(i) == api.ReasonAddressesPending
	})
	if !got.Status.Machine.AddressesPending || got.Status.AddressesPendingSince == nil ||
		condition(got, api.ConditionReady).Status != api.ConditionFalse || condition(got, api.ConditionConfigured) != nil {
		t.Fatalf("addresses pending: machine %+v, since %v, conditions %+v", got.Status.Machine, got.Status.AddressesPendingSince, got.Status.Conditions)
	}
	since := *got.Status.AddressesPendingSince
	var delays []time.Duration
	for range 3 {
		out, err := w.rec.reconcile(context.Background(), w.rec.log, tenant, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		r := w.record(inst.ID)
		if out.done || readyReason(r) != api.ReasonAddressesPending || r.Status.AddressesPendingSince == nil ||
			!r.Status.AddressesPendingSince.Equal(since) || r.Status.ObservedGeneration == r.Generation {
			t.Fatalf("pass while addresses are pending: %+v, status %+v", out, r.Status)
		}
		delays = append(delays, out.requeue)
	}
	if !(delays[0] > 0 && delays[1] > delays[0] && delays[2] > delays[1]) {
		t.Fatalf("delays between looks %v: want them growing", delays)
	}
	m := w.machine(got)
	if n := len(m.Runs()); n != 0 {
		t.Fatalf("%d configure runs while the addresses were pending", n)
	}
	w.cloud.SetAddressesPending(false)
	done := w.waitConfigured(inst.ID)
	if len(done.Status.Machine.Addresses) == 0 || done.Status.Machine.AddressesPending || done.Status.AddressesPendingSince != nil {
		t.Fatalf("configured: machine %+v, since %v", done.Status.Machine, done.Status.AddressesPendingSince)
	}
	w.waitFor(inst.ID, "ready", func(i *api.Instance, err error) bool {
		return err == nil && readyReason(i) == api.ReasonConverged
	})
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d configure runs, want 1", n)
	}
}

// Addresses that stay pending for maxAddressesWait end the looks: Ready
// says AddressesUnknown (with a hint at the guest agent), the generation
// counts as observed and the pass is finished.
func TestPendingAddressesGiveUpAfterTheBound(t *testing.T) {
	h := newHarness(t, fastOptions())
	h.cloud.SetAddressesPending(true)
	inst := h.create(api.InstanceCreateRequest{})
	h.waitFor(inst.ID, "running with addresses pending", func(i *api.Instance, err error) bool {
		return err == nil && readyReason(i) == api.ReasonAddressesPending
	})
	h.clock.Advance(maxAddressesWait)
	got := h.waitFor(inst.ID, "addresses unknown", func(i *api.Instance, err error) bool {
		return err == nil && readyReason(i) == api.ReasonAddressesUnknown
	})
	if got.Status.ObservedGeneration != got.Generation || got.Status.Phase != api.PhaseRunning ||
		condition(got, api.ConditionReady).Status != api.ConditionFalse {
		t.Fatalf("after the bound: status %+v", got.Status)
	}
	out, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, inst.ID)
	if err != nil || !out.done {
		t.Fatalf("pass after the bound: %+v, %v; want finished", out, err)
	}
}
