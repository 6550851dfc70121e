package proxmox

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/sshemu"
	"better-compute.io/compute/services/provider-proxmox/emulator"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/secrets/seal"
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

// Issue item: a pool with machine access configures a DHCP VM over SSH
// once its address is known, through the bus (instance API, reconciler,
// secrets, this provider, the emulator with SSH endpoints): while the
// guest agent does not answer, the VM has no address to reach, no
// configure runs and the instance is not Ready; once it answers, configure
// runs once and the instance is Ready.
func TestAccessConfiguresOnceTheAddressIsKnown(t *testing.T) {
	const delay = 30 * time.Second
	fleet := sshemu.NewFleet(zerolog.Nop())
	t.Cleanup(fleet.Close)
	e := newEnv(t, func(su *setup) { su.emu.AgentStartDelay, su.emu.SSH = delay, fleet })
	s := newStack(t, e)
	p := s.accessPool(t)
	var inst api.Instance
	if err := s.call("create", api.InstanceCreateRequest{PoolID: p.ID, Flavor: testOffer, Name: "conf"}, &inst); err != nil {
		t.Fatal(err)
	}
	reason := func(i *api.Instance, typ api.ConditionType) api.ConditionReason {
		for _, c := range i.Status.Conditions {
			if c.Type == typ {
				return c.Reason
			}
		}
		return ""
	}
	pending := s.waitFor(t, inst.ID, "addresses pending", func(i *api.Instance, err error) bool {
		return err == nil && reason(i, api.ConditionReady) == api.ReasonAddressesPending
	})
	m := fleet.Machine(pending.Status.Machine.ID)
	if m == nil {
		t.Fatalf("VM %s has no SSH endpoint", pending.Status.Machine.ID)
	}
	if n := len(m.Runs()); n != 0 || pending.Status.Machine.SSHEndpoint != "" || reason(pending, api.ConditionConfigured) != "" {
		t.Fatalf("while the agent is down: %d configure runs, machine %+v, conditions %+v", n, pending.Status.Machine, pending.Status.Conditions)
	}
	e.clock.Advance(delay)
	done := s.waitFor(t, inst.ID, "configured and ready", func(i *api.Instance, err error) bool {
		return err == nil && reason(i, api.ConditionConfigured) == api.ReasonStepSucceeded && reason(i, api.ConditionReady) == api.ReasonConverged
	})
	if n := len(m.Runs()); n != 1 || len(done.Status.Machine.Addresses) != 1 {
		t.Fatalf("configured: %d runs (want 1), machine %+v", n, done.Status.Machine)
	}
}

// staticAddress reads ipconfig0's static IPv4 address; DHCP, none, IPv6
// and malformed values give none.
func TestStaticAddressOfIPConfig(t *testing.T) {
	for _, c := range []struct {
		ipconfig0, want string
		ok              bool
	}{
		{"ip=192.168.10.17/24,gw=192.168.10.1", "192.168.10.17", true},
		{"gw=10.0.0.1,ip=10.0.0.5/16", "10.0.0.5", true},
		{"ip=dhcp", "", false},
		{"", "", false},
		{"ip6=2001:db8::5/64", "", false},
		{"ip=2001:db8::5/64", "", false},
		{"ip=10.0.0.5", "", false},
	} {
		got, ok := vmConfig{"ipconfig0": c.ipconfig0}.staticAddress()
		if got != c.want || ok != c.ok {
			t.Errorf("ipconfig0 %q: %q, %v; want %q, %v", c.ipconfig0, got, ok, c.want, c.ok)
		}
	}
}

// accessPool adds a pool like s.pool whose machine access (a platform SSH
// key in the secrets service started here, user root) configures every
// machine with "echo configured", and returns it.
func (s *stack) accessPool(t *testing.T) api.Pool {
	t.Helper()
	kr, err := seal.NewKeyring(seal.Key{ID: "k1", Bytes: bytes.Repeat([]byte{7}, seal.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := secrets.Start(s.env.NC, s.env.Stores, secrets.Options{Keyring: kr, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	var sec api.Secret
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.Call(ctx, s.env.NC, bus.Command(testTenant, bus.ResourceSecrets, "put"),
		api.SecretPutRequest{Name: "platform-ssh", Value: string(pem.EncodeToMemory(block))}, &sec); err != nil {
		t.Fatal(err)
	}
	a := api.PoolAccess{User: "root", PrivateKey: sec.Ref, Configure: &api.AccessStep{Script: "echo configured"}}
	if err := api.CheckPoolAccess(&a); err != nil {
		t.Fatal(err)
	}
	p := s.pool
	p.ID, p.Access = api.NewID(api.PrefixPool), &a
	if _, err := s.env.Stores.PoolTable().Create(ctx, testTenant, p.ID, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Through the bus (instance API, reconciler, secrets, this provider, the
// emulator with SSH endpoints and an agent that answers at once), the
// reconciler takes the created DHCP VM as the create answered it: it
// configures it over SSH at the endpoint the create reported and makes it
// Ready without ever getting it (no GET …/status/current; the one config
// read is the template's, the one agent request the create's).
func TestReconcilerTakesTheCreatedMachine(t *testing.T) {
	fleet := sshemu.NewFleet(zerolog.Nop())
	t.Cleanup(fleet.Close)
	e := newEnv(t, func(su *setup) { su.emu.SSH = fleet })
	s := newStack(t, e)
	p := s.accessPool(t)
	e.emu.ResetCalls()
	var inst api.Instance
	if err := s.call("create", api.InstanceCreateRequest{PoolID: p.ID, Flavor: testOffer, Name: "taken"}, &inst); err != nil {
		t.Fatal(err)
	}
	done := s.waitFor(t, inst.ID, "configured and ready", func(i *api.Instance, err error) bool {
		for _, c := range i.Status.Conditions {
			if c.Type == api.ConditionReady && c.Reason == api.ReasonConverged {
				return err == nil
			}
		}
		return false
	})
	time.Sleep(200 * time.Millisecond) // 10 of the reconciler's poll intervals: nothing more is sent
	m := fleet.Machine(done.Status.Machine.ID)
	if m == nil || len(m.Runs()) != 1 {
		t.Fatalf("machine %+v: want one configure run on its SSH endpoint", done.Status.Machine)
	}
	for route, want := range map[string]int{
		emulator.RouteStatusCurrent: 0, emulator.RouteConfigGet: 1, emulator.RouteAgentInterfaces: 1, emulator.RouteClone: 1,
	} {
		if n := e.emu.Calls(route); n != want {
			t.Errorf("%s sent %d times, want %d (all: %v)", route, n, want, e.emu.CallLog())
		}
	}
}
