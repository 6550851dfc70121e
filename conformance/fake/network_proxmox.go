package fake

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// The proxmox fake's cluster: two nodes of emulator.DefaultNodeMemoryBytes
// with bridges vmbr0 and vmbr1, and a shared storage holding the
// template; pools use vmbr1 with tag proxmoxVLAN and addresses of
// proxmoxRange.
const (
	proxmoxSharedStorage = "shared"
	proxmoxBridge        = "vmbr1"
	proxmoxVLAN          = 42
	// proxmoxFullBytes is a filled node's memory: less than the offer's.
	proxmoxFullBytes = 1 << 30
)

// proxmoxNodeNames are the fake cluster's nodes.
var proxmoxNodeNames = []string{"pve1", "pve2"}

// proxmoxRange is the address range of the fake's pools.
var proxmoxRange = api.AddressRange{CIDR: "192.168.77.0/24", Gateway: "192.168.77.1", DNS: []string{"192.168.77.2"}}

// proxmoxNodes are the emulator's nodes.
func proxmoxNodes() []emulator.Node {
	out := make([]emulator.Node, 0, len(proxmoxNodeNames))
	for _, n := range proxmoxNodeNames {
		out = append(out, emulator.Node{Name: n, Bridges: []string{emulator.DefaultBridge, proxmoxBridge}})
	}
	return out
}

// proxmoxNetwork implements conformance.NodeNetwork on the emulator.
type proxmoxNetwork struct{ emu *emulator.Emulator }

var _ conformance.NodeNetwork = proxmoxNetwork{}

// Pool is vmbr1 tag 42 on both nodes, addresses of proxmoxRange.
func (proxmoxNetwork) Pool() conformance.NodeNetworkPool {
	return conformance.NodeNetworkPool{Network: api.PoolNetwork{Bridge: proxmoxBridge, VLAN: proxmoxVLAN},
		Placement: api.PoolPlacement{Nodes: append([]string(nil), proxmoxNodeNames...)}, Addresses: proxmoxRange}
}

// Machine reads VM id's net0 (bridge=, tag=), ipconfig0 (ip=) and node.
func (n proxmoxNetwork) Machine(_ context.Context, id string) (conformance.NodeMachine, error) {
	vmid, err := strconv.Atoi(id)
	if err != nil {
		return conformance.NodeMachine{}, fmt.Errorf("machine id %q is not a VMID", id)
	}
	v, ok := n.emu.VM(vmid)
	if !ok {
		return conformance.NodeMachine{}, fmt.Errorf("VM %d does not exist", vmid)
	}
	out := conformance.NodeMachine{Node: v.Node}
	for _, opt := range strings.Split(v.Config["net0"], ",")[1:] {
		if b, ok := strings.CutPrefix(opt, "bridge="); ok {
			out.Bridge = b
		}
		if t, ok := strings.CutPrefix(opt, "tag="); ok {
			out.VLAN, _ = strconv.Atoi(t)
		}
	}
	for _, opt := range strings.Split(v.Config["ipconfig0"], ",") {
		if ip, ok := strings.CutPrefix(opt, "ip="); ok && ip != "dhcp" {
			out.Address = ip
		}
	}
	return out, nil
}

// FillNode shrinks node's memory below the offer's until undo.
func (n proxmoxNetwork) FillNode(_ context.Context, node string) (func(), error) {
	if err := n.emu.SetNodeMemory(node, proxmoxFullBytes); err != nil {
		return nil, err
	}
	return func() { _ = n.emu.SetNodeMemory(node, emulator.DefaultNodeMemoryBytes) }, nil
}
