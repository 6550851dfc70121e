package proxmox

import (
	"context"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// sharedStorage is the shared storage onSharedStorage puts the templates on.
const sharedStorage = "ceph-vm"

// onSharedStorage puts the test templates on a shared storage every node
// has, so PVE can clone them to any node.
func onSharedStorage(su *setup) {
	su.emu.Storages = append(su.emu.Storages, emulator.Storage{Name: sharedStorage, Shared: true})
	for i := range su.emu.Templates {
		su.emu.Templates[i].Storage = sharedStorage
	}
}

// threeNodes is a cluster of pve1 (8 GiB), pve2 (64 GiB) and pve3
// (32 GiB), its templates on shared storage, a shared fast storage on
// pve2 and pve3 and bridge vmbr1 on pve1 and pve2.
func threeNodes(su *setup) {
	su.emu.Nodes = []emulator.Node{
		{Name: "pve1", MemoryBytes: 8 << 30, Bridges: []string{"vmbr0", "vmbr1"}},
		{Name: "pve2", MemoryBytes: 64 << 30, Bridges: []string{"vmbr0", "vmbr1"}},
		{Name: "pve3", MemoryBytes: 32 << 30},
	}
	onSharedStorage(su)
	su.emu.Storages = append(su.emu.Storages, emulator.Storage{Name: "fast", Shared: true, Nodes: []string{"pve2", "pve3"}})
}

func TestMachineNetMapping(t *testing.T) {
	addr := &api.StaticAddress{Address: "192.168.10.17/24", Gateway: "192.168.10.1", DNS: []string{"192.168.10.2", "1.1.1.1"}}
	cases := []struct {
		name string
		spec api.MachineSpec
		want netSpec
		path string
	}{
		{"dhcp on the account's bridge", api.MachineSpec{}, netSpec{bridge: "vmbr0", ipconfig0: ipDHCP}, ""},
		{"bridge and vlan", api.MachineSpec{Network: &api.PoolNetwork{Bridge: "vmbr1", VLAN: 42}},
			netSpec{bridge: "vmbr1", vlan: 42, ipconfig0: ipDHCP, pool: true}, ""},
		{"the pool's vlan", api.MachineSpec{Network: &api.PoolNetwork{VLAN: 7}},
			netSpec{bridge: "vmbr0", vlan: 7, ipconfig0: ipDHCP, pool: true}, ""},
		{"an empty pool network", api.MachineSpec{Network: &api.PoolNetwork{}},
			netSpec{bridge: "vmbr0", ipconfig0: ipDHCP}, ""},
		{"static address", api.MachineSpec{Address: addr},
			netSpec{bridge: "vmbr0", ipconfig0: "ip=192.168.10.17/24,gw=192.168.10.1", nameserver: "192.168.10.2 1.1.1.1"}, ""},
		{"vlan 4095", api.MachineSpec{Network: &api.PoolNetwork{VLAN: 4095}}, netSpec{}, "machine.network.vlan"},
		{"bad bridge", api.MachineSpec{Network: &api.PoolNetwork{Bridge: "vmbr0,tag=3"}}, netSpec{}, "machine.network.bridge"},
		{"address without prefix", api.MachineSpec{Address: &api.StaticAddress{Address: "192.168.10.17", Gateway: "192.168.10.1"}},
			netSpec{}, "machine.address.address"},
		{"gateway outside", api.MachineSpec{Address: &api.StaticAddress{Address: "192.168.10.17/24", Gateway: "10.0.0.1"}},
			netSpec{}, "machine.address.gateway"},
		{"bad dns", api.MachineSpec{Address: &api.StaticAddress{Address: "192.168.10.17/24", Gateway: "192.168.10.1", DNS: []string{"x"}}},
			netSpec{}, "machine.address.dns[0]"},
	}
	for _, tc := range cases {
		got, err := machineNet(tc.spec, DefaultBridge)
		if tc.path != "" {
			if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != tc.path {
				t.Errorf("%s: %v, want INVALID_INPUT %s", tc.name, err, tc.path)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	nets := []struct{ in, bridge, want string }{
		{"virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1", "vmbr1", "virtio=BC:24:11:00:00:01,bridge=vmbr1,firewall=1,tag=42"},
		{"virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=7", "vmbr0", "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=42"},
		{"", "vmbr0", "virtio,bridge=vmbr0,tag=42"},
	}
	for _, n := range nets {
		if got := withNet(n.in, n.bridge, 42); got != n.want {
			t.Errorf("withNet(%q, %s, 42) = %q, want %q", n.in, n.bridge, got, n.want)
		}
	}
	if got := withNet("virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=7", "vmbr0", 0); got != "virtio=BC:24:11:00:00:01,bridge=vmbr0" {
		t.Errorf("untagged: %q", got)
	}
}

func TestCreateAppliesVLANAndStaticAddress(t *testing.T) {
	e := newEnv(t, threeNodes)
	sp := spec("inst_net")
	sp.Network = &api.PoolNetwork{Bridge: "vmbr1", VLAN: 42}
	sp.Placement = &api.PoolPlacement{Nodes: []string{"pve1", "pve2"}}
	sp.Address = &api.StaticAddress{Address: "192.168.10.17/24", Gateway: "192.168.10.1", DNS: []string{"192.168.10.2"}}
	m := providertest.MustCreate(t, e.client, e.call("inst_net"), sp)
	v := e.vm(t, mustAtoi(t, m.ID))
	if b, _ := netOption(v.Config["net0"], "bridge"); b != "vmbr1" || !strings.HasSuffix(v.Config["net0"], ",tag=42") {
		t.Errorf("net0 = %q, want bridge vmbr1 tag 42", v.Config["net0"])
	}
	// net0 was rewritten from the template's config, never read from the
	// clone (clonedConfig): it must have a MAC, and not the template's.
	tpl := e.vm(t, testTemplateID)
	if mac := strings.Split(v.Config["net0"], ",")[0]; !strings.HasPrefix(mac, "virtio=") || mac == strings.Split(tpl.Config["net0"], ",")[0] {
		t.Errorf("net0 = %q, template's %q: want a MAC of its own", v.Config["net0"], tpl.Config["net0"])
	}
	if v.Config["ipconfig0"] != "ip=192.168.10.17/24,gw=192.168.10.1" || v.Config["nameserver"] != "192.168.10.2" {
		t.Errorf("ipconfig0 %q nameserver %q", v.Config["ipconfig0"], v.Config["nameserver"])
	}
	if got := e.mustGet(t, m.ID); got == nil || len(got.Addresses) == 0 || got.Addresses[0] != "192.168.10.17" {
		t.Errorf("get reports %+v, want the static address first", got)
	}
}

func TestCreateOnABridgeTheNodeLacksFails(t *testing.T) {
	e := newEnv(t, threeNodes)
	sp := spec("inst_nobridge")
	sp.Network = &api.PoolNetwork{Bridge: "vmbr1"}
	sp.Placement = &api.PoolPlacement{Nodes: []string{"pve3"}}
	_, err := e.client.Create(context.Background(), e.call("inst_nobridge"), sp)
	if ce := api.AsComputeError(err); ce.Code != api.CodeProviderError || !strings.Contains(ce.Message, "bridge 'vmbr1' does not exist") {
		t.Fatalf("create on pve3 with vmbr1: %v, want the start refused as PVE does", err)
	}
}

func TestPlacementSkipsAFullNode(t *testing.T) {
	e := newEnv(t, threeNodes)
	// pve2 has the most headroom until it is full: 60 GiB of running VMs.
	if _, err := e.emu.SeedVMs(emulator.SeedSpec{Count: 1, FirstVMID: 500, Node: "pve2", Running: true, MemoryMiB: 62 << 10}); err != nil {
		t.Fatal(err)
	}
	sp := spec("inst_place")
	m := providertest.MustCreate(t, e.client, e.call("inst_place"), sp)
	if v := e.vm(t, mustAtoi(t, m.ID)); v.Node != "pve3" {
		t.Fatalf("clone on %s, want pve3 (pve2 full, pve3 more headroom than pve1)", v.Node)
	}
	sp = spec("inst_allowed")
	sp.Placement = &api.PoolPlacement{Nodes: []string{"pve1", "pve2"}}
	m = providertest.MustCreate(t, e.client, e.call("inst_allowed"), sp)
	if v := e.vm(t, mustAtoi(t, m.ID)); v.Node != "pve1" {
		t.Fatalf("clone on %s, want pve1 (the only allowed node not full)", v.Node)
	}
	// pve1 now runs the 4 GiB clone: 4 GiB left, not enough for large (32 GiB).
	sp = spec("inst_full")
	sp.OfferID, sp.Placement = "large", &api.PoolPlacement{Nodes: []string{"pve1", "pve2"}}
	_, err := e.client.Create(context.Background(), e.call("inst_full"), sp)
	if ce := api.AsComputeError(err); ce.Code != api.CodeCapacityUnavailable || ce.Path() != "placement.nodes" {
		t.Fatalf("no allowed node holds it: %v, want CAPACITY_UNAVAILABLE placement.nodes", err)
	}
	if n := len(e.machines()); n != 3 {
		t.Fatalf("%d VMs, want the seeded one and two clones (nothing made for the refusal)", n)
	}
}

func TestPlacementKeepsLocalTemplatesOnTheirNode(t *testing.T) {
	e := newEnv(t, func(su *setup) {
		su.emu.Nodes = []emulator.Node{{Name: "pve1", MemoryBytes: 8 << 30}, {Name: "pve2"}}
	})
	m := e.create(t, "inst_local")
	if v := e.vm(t, mustAtoi(t, m.ID)); v.Node != "pve1" {
		t.Fatalf("clone of a local-storage template on %s, want its node pve1", v.Node)
	}
	sp := spec("inst_elsewhere")
	sp.Placement = &api.PoolPlacement{Nodes: []string{"pve2"}}
	_, err := e.client.Create(context.Background(), e.call("inst_elsewhere"), sp)
	if ce := api.AsComputeError(err); ce.Code != api.CodeCapacityUnavailable || !strings.Contains(ce.Message, "shared storage") {
		t.Fatalf("only pve2 allowed, template local on pve1: %v, want CAPACITY_UNAVAILABLE saying why", err)
	}
}

func TestFlavorStorage(t *testing.T) {
	e := newEnv(t, threeNodes)
	sp := spec("inst_fast")
	sp.Storage = "fast"
	m := providertest.MustCreate(t, e.client, e.call("inst_fast"), sp)
	v := e.vm(t, mustAtoi(t, m.ID))
	if v.Node != "pve2" || !strings.HasPrefix(v.Config["scsi0"], "fast:") {
		t.Fatalf("clone on %s with scsi0 %q, want pve2 (of the nodes with fast, the most headroom) on fast", v.Node, v.Config["scsi0"])
	}
}

func TestCheckPool(t *testing.T) {
	e := newEnv(t, threeNodes)
	yes := true
	cases := []struct {
		name string
		req  api.ProviderPoolCheckRequest
		path string
	}{
		{"nothing to check", api.ProviderPoolCheckRequest{}, ""},
		{"all known", api.ProviderPoolCheckRequest{Network: &api.PoolNetwork{Bridge: "vmbr1", VLAN: 10},
			Placement: &api.PoolPlacement{Nodes: []string{"pve1", "pve2"}}, Flavors: []api.Flavor{{Name: "a", Storage: "fast"}}}, ""},
		{"unknown node", api.ProviderPoolCheckRequest{Placement: &api.PoolPlacement{Nodes: []string{"pve1", "pve9"}}}, "placement.nodes[1]"},
		{"bridge a node lacks", api.ProviderPoolCheckRequest{Network: &api.PoolNetwork{Bridge: "vmbr1"}}, "network.bridge"},
		{"unknown storage", api.ProviderPoolCheckRequest{Flavors: []api.Flavor{{Name: "a"}, {Name: "b", Storage: "nope"}}}, "flavors[1].storage"},
		{"storage no allowed node has", api.ProviderPoolCheckRequest{Placement: &api.PoolPlacement{Nodes: []string{"pve1"}},
			Flavors: []api.Flavor{{Name: "a", Storage: "fast"}}}, "flavors[0].storage"},
		{"vlan 0 is untagged, 4095 is no tag", api.ProviderPoolCheckRequest{Network: &api.PoolNetwork{VLAN: 4095}}, "network.vlan"},
		{"gateway outside", api.ProviderPoolCheckRequest{Network: &api.PoolNetwork{Addresses: &api.AddressRange{
			CIDR: "192.168.10.0/24", Gateway: "192.168.11.1"}}}, "network.addresses.gateway"},
		{"hetzner field", api.ProviderPoolCheckRequest{Network: &api.PoolNetwork{PublicIPv4: &yes}}, "network.publicIPv4"},
		{"spread", api.ProviderPoolCheckRequest{Placement: &api.PoolPlacement{Spread: true}}, "placement.spread"},
	}
	for _, tc := range cases {
		err := e.client.CheckPool(context.Background(), e.call(""), tc.req)
		if tc.path == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != tc.path {
			t.Errorf("%s: %v, want INVALID_INPUT %s", tc.name, err, tc.path)
		}
	}
}
