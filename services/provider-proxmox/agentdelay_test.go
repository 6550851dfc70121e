package proxmox

import (
	"fmt"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// A DHCP VM whose QEMU guest agent answers only some time after the start
// (as on real PVE while the guest boots), through the bus (instance API,
// reconciler, this provider, the emulator): the instance runs with its
// addresses pending and is not Ready, and once the agent answers it is
// Ready with the agent's address, without a new command.
func TestAgentDelayEndsRunningWithItsAddress(t *testing.T) {
	const delay = 30 * time.Second
	e := newEnv(t, func(su *setup) { su.emu.AgentStartDelay = delay })
	s := newStack(t, e)
	var inst api.Instance
	if err := s.call("create", api.InstanceCreateRequest{PoolID: s.pool.ID, Flavor: testOffer, Name: "late"}, &inst); err != nil {
		t.Fatal(err)
	}
	ready := func(i *api.Instance) *api.Condition {
		for k := range i.Status.Conditions {
			if c := &i.Status.Conditions[k]; c.Type == api.ConditionReady {
				return c
			}
		}
		return nil
	}
	pending := s.waitFor(t, inst.ID, "running with addresses pending", func(i *api.Instance, err error) bool {
		c := ready(i)
		return err == nil && i.Status.Phase == api.PhaseRunning && c != nil && c.Reason == api.ReasonAddressesPending
	})
	if m := pending.Status.Machine; !m.AddressesPending || len(m.Addresses) != 0 || pending.Status.AddressesPendingSince == nil ||
		ready(pending).Status != api.ConditionFalse {
		t.Fatalf("while the agent is down: machine %+v, since %v, ready %+v", m, pending.Status.AddressesPendingSince, ready(pending))
	}
	e.clock.Advance(delay)
	got := s.waitFor(t, inst.ID, "ready with its address", func(i *api.Instance, err error) bool {
		c := ready(i)
		return err == nil && c != nil && c.Status == api.ConditionTrue
	})
	v := e.vm(t, mustAtoi(t, got.Status.Machine.ID))
	want := fmt.Sprintf("10.%d.%d.%d", v.VMID>>16&255, v.VMID>>8&255, v.VMID&255) // the emulator's lease
	if m := got.Status.Machine; m.AddressesPending || len(m.Addresses) != 1 || m.Addresses[0] != want || got.Status.AddressesPendingSince != nil {
		t.Fatalf("once the agent answers: machine %+v (want address %s), since %v", m, want, got.Status.AddressesPendingSince)
	}
}

// A VM with a static address (ipconfig0) is reported with it while it
// runs, without asking the guest agent (which does not answer yet).
func TestStaticAddressNeedsNoAgent(t *testing.T) {
	e := newEnv(t, func(su *setup) { su.emu.AgentStartDelay = time.Hour })
	sp := spec("inst_static")
	sp.Address = &api.StaticAddress{Address: "172.16.5.9/24", Gateway: "172.16.5.1"}
	m, err := e.client.Create(t.Context(), e.call("inst_static"), sp)
	if err != nil {
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	got := e.mustGet(t, m.ID)
	if got.State != api.StateRunning || got.AddressesPending || len(got.Addresses) != 1 || got.Addresses[0] != "172.16.5.9" {
		t.Fatalf("static VM: %+v", got)
	}
	for _, r := range e.emu.CallLog() {
		if r == emulator.RouteAgentInterfaces {
			t.Fatalf("the get asked the agent: %v", e.emu.CallLog())
		}
	}
}
