package conformance

import (
	"context"

	"better-compute.io/compute/pkg/api"
)

// NodeNetwork is the backend's side of the network and placement behaviours
// (Subject.NodeNetwork): what a pool of the account can ask for, and how a
// machine is attached and placed in the backend, which the provider's
// replies do not show.
type NodeNetwork interface {
	// Pool is a network (a bridge and a VLAN tag) and a placement (at
	// least two nodes) the account can have, and an address range the
	// behaviours hand addresses out of (the control plane's job; each
	// address to one machine at a time).
	Pool() NodeNetworkPool
	// Machine is how machine id is attached and placed in the backend.
	Machine(ctx context.Context, id string) (NodeMachine, error)
	// FillNode makes node unable to hold another machine of the
	// subject's offer until undo is called. Errors: ErrNotSupported.
	FillNode(ctx context.Context, node string) (undo func(), err error)
}

// NodeNetworkPool is a pool network and placement of the account (see
// NodeNetwork.Pool).
type NodeNetworkPool struct {
	Network   api.PoolNetwork
	Placement api.PoolPlacement
	Addresses api.AddressRange
}

// NodeMachine is a machine's first NIC and place in the backend:
// bridge, VLAN tag (0: untagged), static address in CIDR notation (""
// for DHCP) and node.
type NodeMachine struct {
	Bridge  string
	VLAN    int
	Address string
	Node    string
}
