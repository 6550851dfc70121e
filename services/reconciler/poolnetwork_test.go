package reconciler

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// useHetznerPool is useHetzner with the harness pool replaced by one of
// the same account and flavors with the network and placement given.
func (h *harness) useHetznerPool(network *api.PoolNetwork, placement *api.PoolPlacement) *emulator.Server {
	h.t.Helper()
	emu := h.useHetzner()
	p := h.pool
	p.ID, p.Network, p.Placement = api.NewID(api.PrefixPool), network, placement
	if _, err := h.env.Stores.PoolTable().Create(context.Background(), tenant, p.ID, p); err != nil {
		h.t.Fatal(err)
	}
	h.pool = p
	return emu
}

// Location fallback end to end: fsn1 has no capacity, so the instance's
// one server is made in nbg1, its machine records nbg1, and the Placed
// condition explains why; the instance is Running and Ready (the note is
// no problem).
func TestHetznerLocationFallbackIsRecorded(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetznerPool(nil, &api.PoolPlacement{Locations: []string{"fsn1", "nbg1"}})
	emu.Emulator().SetLocationFull("fsn1", true)
	running, err := h.env.NC.SubscribeSync(bus.Event(tenant, bus.ResourceInstances, "*", string(api.PhaseEvent(api.PhaseRunning))))
	if err != nil {
		t.Fatal(err)
	}
	inst := h.create(api.InstanceCreateRequest{Name: "web-1"})
	got := h.waitPhase(inst.ID, api.PhaseRunning)
	msg, err := running.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ev api.Event
	if err := json.Unmarshal(msg.Data, &ev); err != nil || !strings.Contains(ev.Message, "LocationFallback") || !strings.Contains(ev.Message, "fsn1") {
		t.Fatalf("running event = %s (%v), want the fallback explained", msg.Data, err)
	}
	servers := emu.Emulator().Servers()
	if len(servers) != 1 || servers[0].Location != "nbg1" {
		t.Fatalf("servers = %+v, want one in nbg1", servers)
	}
	if got.Status.Machine == nil || got.Status.Machine.Region != "nbg1" {
		t.Fatalf("machine = %+v, want region nbg1", got.Status.Machine)
	}
	placed := condition(got, api.ConditionPlaced)
	if placed == nil || placed.Status != api.ConditionTrue || placed.Reason != api.ReasonLocationFallback ||
		!strings.Contains(placed.Message, "fsn1") || !strings.Contains(placed.Message, "resource_unavailable") {
		t.Fatalf("Placed condition = %+v, conditions %+v", placed, got.Status.Conditions)
	}
	if ready := condition(got, api.ConditionReady); ready == nil || ready.Status != api.ConditionTrue {
		t.Fatalf("Ready = %+v, want True", ready)
	}
}

// The pool's network and spread placement reach the provider: a server
// without public IPv4, in the network, with the firewall, in the pool's
// placement group.
func TestHetznerPoolNetworkReachesTheServer(t *testing.T) {
	h := newHarness(t, fastOptions())
	no := false
	emu := h.useHetznerPool(&api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend"}}, Firewalls: []string{"web"},
		PublicIPv4: &no}, &api.PoolPlacement{Spread: true})
	e := emu.Emulator()
	netID, fwID := e.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central"), e.AddFirewall("web")
	inst := h.create(api.InstanceCreateRequest{Name: "db-1"})
	got := h.waitPhase(inst.ID, api.PhaseRunning)
	servers := e.Servers()
	if len(servers) != 1 {
		t.Fatalf("servers = %+v", servers)
	}
	s := servers[0]
	if s.PublicIPv4 != "" || s.PrivateIP(netID) == "" || len(s.Firewalls) != 1 || s.Firewalls[0] != fwID || s.PlacementGroup == 0 {
		t.Fatalf("server = %+v, want no public IPv4, network %d, firewall %d, a placement group", s, netID, fwID)
	}
	groups := e.PlacementGroups()
	if len(groups) != 1 || groups[0].Labels["better-compute.io/pool"] != h.pool.ID {
		t.Fatalf("groups = %+v, want one of pool %s", groups, h.pool.ID)
	}
	if a := got.Status.Machine.Addresses; len(a) != 2 || a[1] != s.PrivateIP(netID) {
		t.Fatalf("machine addresses = %v", a)
	}
}

// A private network's ipRange naming its second subnet, end to end: the
// instance's server is attached through that subnet (attach_to_network
// with ip_range after the create), and the instance records the machine,
// and runs, only once it is attached: the machine it recorded already has
// the address of the range.
func TestHetznerPoolIPRangeIsHonoured(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetznerPool(&api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend", IPRange: "10.0.2.0/24"}}}, nil)
	e := emu.Emulator()
	netID := e.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central", "10.0.2.0/24@eu-central")
	inst := h.create(api.InstanceCreateRequest{Name: "db-1"})
	got := h.waitPhase(inst.ID, api.PhaseRunning)
	servers := e.Servers()
	if len(servers) != 1 || servers[0].PrivateIP(netID) != "10.0.2.1" {
		t.Fatalf("servers = %+v, want one with 10.0.2.1 in network %d", servers, netID)
	}
	if a := got.Status.Machine.Addresses; !slices.Contains(a, "10.0.2.1") {
		t.Fatalf("machine addresses = %v, want 10.0.2.1", a)
	}
	if n := e.CallCounts()[emulator.RouteAttachToNetwork]; n != 1 {
		t.Fatalf("%d attach_to_network calls, want 1", n)
	}
}

// notePlacement sets the Placed condition for a machine with a note and
// drops it for one without.
func TestNotePlacement(t *testing.T) {
	var st api.InstanceStatus
	notePlacement(&st, &api.ExternalMachine{PlacementNote: "created in nbg1: no capacity in fsn1"})
	if c := statusCondition(&st, api.ConditionPlaced); c == nil || c.Reason != api.ReasonLocationFallback || c.Problem() {
		t.Fatalf("conditions = %+v", st.Conditions)
	}
	notePlacement(&st, &api.ExternalMachine{})
	if len(st.Conditions) != 0 {
		t.Fatalf("conditions after a machine in the first location = %+v", st.Conditions)
	}
}
