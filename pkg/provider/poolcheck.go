package provider

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// VerbCheckPool is the provider subject that checks a pool's network,
// placement and flavors against the account before the pool is stored
// (compute.internal.provider.<id>.checkpool, api.ProviderPoolCheckRequest).
const VerbCheckPool = "checkpool"

// Pool capabilities: a provider claims the pool fields it honours. Each is
// a claim about create (the fields of MachineSpec.Network and
// MachineSpec.Placement); none adds a call. checkpool refuses a pool that
// sets a field its provider does not claim (INVALID_INPUT naming it).
const (
	// CapabilityNetworkPrivate: network.privateNetworks, servers attached
	// to private networks at create.
	CapabilityNetworkPrivate = "network.private"
	// CapabilityNetworkFirewalls: network.firewalls applied at create.
	CapabilityNetworkFirewalls = "network.firewalls"
	// CapabilityNetworkPublicIP: network.publicIPv4/publicIPv6 turn the
	// public addresses off (a machine without public IPv4 has none).
	CapabilityNetworkPublicIP = "network.publicIP"
	// CapabilityPlacementSpread: placement.spread, the pool's machines on
	// different hosts.
	CapabilityPlacementSpread = "placement.spread"
	// CapabilityPlacementLocations: placement.locations, an ordered list of
	// locations tried in turn while one has no capacity.
	CapabilityPlacementLocations = "placement.locations"
)

// PoolCapabilities are the pool capabilities (see CapabilityNetworkPrivate).
var PoolCapabilities = []string{CapabilityNetworkPrivate, CapabilityNetworkFirewalls, CapabilityNetworkPublicIP,
	CapabilityPlacementSpread, CapabilityPlacementLocations,
	CapabilityNetworkVLAN, CapabilityStaticIPv4, CapabilityPlacementNodes}

// PoolChecker is implemented by clients that check a pool against the
// account (checkpool): unknown networks, firewalls or locations, a
// combination the provider cannot make. It answers nil or INVALID_INPUT
// whose details.path names the pool request's field; the account's API
// errors (RATE_LIMITED, UNAVAILABLE, PROVIDER_ERROR) pass through.
type PoolChecker interface {
	CheckPool(ctx context.Context, call *Call, req api.ProviderPoolCheckRequest) error
}

// poolFieldCapabilities pairs each pool field with the capability a
// provider must claim to accept it, in the order checkpool checks them.
var poolFieldCapabilities = []struct {
	path       string
	capability string
	set        func(n *api.PoolNetwork, p *api.PoolPlacement) bool
}{
	{"network.privateNetworks", CapabilityNetworkPrivate,
		func(n *api.PoolNetwork, _ *api.PoolPlacement) bool { return n != nil && len(n.PrivateNetworks) > 0 }},
	{"network.firewalls", CapabilityNetworkFirewalls,
		func(n *api.PoolNetwork, _ *api.PoolPlacement) bool { return n != nil && len(n.Firewalls) > 0 }},
	{"network.publicIPv4", CapabilityNetworkPublicIP,
		func(n *api.PoolNetwork, _ *api.PoolPlacement) bool {
			return n != nil && n.PublicIPv4 != nil && !*n.PublicIPv4
		}},
	{"network.publicIPv6", CapabilityNetworkPublicIP,
		func(n *api.PoolNetwork, _ *api.PoolPlacement) bool {
			return n != nil && n.PublicIPv6 != nil && !*n.PublicIPv6
		}},
	{"placement.spread", CapabilityPlacementSpread,
		func(_ *api.PoolNetwork, p *api.PoolPlacement) bool { return p != nil && p.Spread }},
	{"placement.locations", CapabilityPlacementLocations,
		func(_ *api.PoolNetwork, p *api.PoolPlacement) bool { return p != nil && len(p.Locations) > 0 }},
	{"network.bridge", CapabilityNetworkVLAN,
		func(n *api.PoolNetwork, _ *api.PoolPlacement) bool { return n != nil && n.Bridge != "" }},
	{"network.vlan", CapabilityNetworkVLAN,
		func(n *api.PoolNetwork, _ *api.PoolPlacement) bool { return n != nil && n.VLAN != 0 }},
	{"network.addresses", CapabilityStaticIPv4,
		func(n *api.PoolNetwork, _ *api.PoolPlacement) bool { return n != nil && n.Addresses != nil }},
	{"placement.nodes", CapabilityPlacementNodes,
		func(_ *api.PoolNetwork, p *api.PoolPlacement) bool { return p != nil && len(p.Nodes) > 0 }},
}

// checkPool serves checkpool: a field set whose capability the provider
// does not claim is INVALID_INPUT naming it; then the client's CheckPool,
// when it implements PoolChecker. Reply: Empty.
func (s *server) checkPool(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderPoolCheckRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	for _, f := range poolFieldCapabilities {
		if f.set(in.Network, in.Placement) && !s.def.Has(f.capability) {
			return nil, api.InvalidInput(f.path, "provider %s does not support %s (capability %s)", s.def.ID(), f.path, f.capability)
		}
	}
	if pc, ok := c.(PoolChecker); ok {
		if err := pc.CheckPool(ctx, call, in); err != nil {
			return nil, err
		}
	}
	return api.Empty{}, nil
}

// CheckPool asks the provider whether the account can have the pool of
// req (checkpool): nil, or INVALID_INPUT naming the field.
func (r Remote) CheckPool(ctx context.Context, req api.ProviderPoolCheckRequest) error {
	return r.call(ctx, VerbCheckPool, req, nil)
}
