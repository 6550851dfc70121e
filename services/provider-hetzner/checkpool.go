package hetzner

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// CheckPool answers checkpool: whether the account's project can have the
// pool's network and placement. It refuses, with INVALID_INPUT naming the
// pool request's field:
//   - Proxmox VE fields (network.bridge, network.vlan, network.addresses,
//     placement.nodes, flavors[i].storage);
//   - network.publicIPv4: both public IPs off and no private network (the
//     server would be unreachable; the hcloud CLI refuses it too);
//   - network.firewalls: firewalls with both public IPs off (they act on
//     the public interface only: private_net_only_server), or more than
//     maxServerFirewalls (checked before any request);
//   - placement.locations[i]: an unknown location, or one listed twice;
//   - network.privateNetworks[i].network: a network that does not exist,
//     is listed twice, or has no subnet in the network zone of a location
//     the pool may use (placement.locations, else the account's location);
//   - network.privateNetworks[i].ipRange: not a CIDR, one with host bits
//     set (10.0.1.5/24: not a network address), or not a subnet of
//     the network in the network zone of every location the pool may use
//     (the server joins it by attach_to_network with ip_range; see
//     network.go), or, for the attachment that joins in POST /servers
//     (rangedAtCreate: no public IP, every attachment with an ipRange),
//     not the network's first subnet in that zone;
//   - network.firewalls[i]: a firewall that does not exist, or one listed
//     twice (by name or id).
//
// Requests: GET /locations when the pool names networks or locations, one
// GET per network and per firewall. Errors besides INVALID_INPUT: the
// API's (RATE_LIMITED, PROVIDER_ERROR, UNAVAILABLE).
func (c *client) CheckPool(ctx context.Context, call *provider.Call, req api.ProviderPoolCheckRequest) (err error) {
	if err := checkProxmoxFields(req); err != nil {
		return err
	}
	n, p := req.Network, req.Placement
	if n == nil {
		n = &api.PoolNetwork{}
	}
	if p == nil {
		p = &api.PoolPlacement{}
	}
	switch {
	case !on(n.PublicIPv4) && !on(n.PublicIPv6) && len(n.PrivateNetworks) == 0:
		return api.InvalidInput("network.publicIPv4", "a server without public IPv4 and IPv6 needs a private network (network.privateNetworks)")
	case !on(n.PublicIPv4) && !on(n.PublicIPv6) && len(n.Firewalls) > 0:
		return api.InvalidInput("network.firewalls", "firewalls act on the public interface only: a server without public IPs cannot have one")
	case len(n.Firewalls) > maxServerFirewalls:
		return api.InvalidInput("network.firewalls", "%d firewalls: Hetzner Cloud applies at most %d to a server",
			len(n.Firewalls), maxServerFirewalls)
	}
	if len(n.PrivateNetworks) == 0 && len(n.Firewalls) == 0 && len(p.Locations) == 0 {
		return nil
	}
	s, err := c.open(ctx, call, provider.VerbCheckPool)
	if err != nil {
		return err
	}
	defer func() { err = s.done(ctx, err) }()
	zones, err := c.locationZones(ctx, s, p.Locations)
	if err != nil {
		return err
	}
	if err := checkNetworks(ctx, s, n, zones); err != nil {
		return err
	}
	seen := map[int64]bool{}
	for i, ref := range n.Firewalls {
		f, err := resolveFirewall(ctx, s, ref)
		if err != nil {
			return err
		}
		path := fmt.Sprintf("network.firewalls[%d]", i)
		switch {
		case f == nil:
			return api.InvalidInput(path, "the project has no firewall %q", ref)
		case seen[f.ID]:
			return api.InvalidInput(path, "firewall %q is listed twice", ref)
		}
		seen[f.ID] = true
	}
	return nil
}

// maxServerFirewalls is how many firewalls Hetzner Cloud applies to one
// server (its documented limit: 5 per server, label selections counted).
const maxServerFirewalls = 5

// checkProxmoxFields refuses the pool fields of Proxmox VE.
func checkProxmoxFields(req api.ProviderPoolCheckRequest) error {
	pve := func(path string) error {
		return api.InvalidInput(path, "%s is a Proxmox VE field; provider %s does not take it", path, ProviderID)
	}
	if n := req.Network; n != nil {
		switch {
		case n.Bridge != "":
			return pve("network.bridge")
		case n.VLAN != 0:
			return pve("network.vlan")
		case n.Addresses != nil:
			return pve("network.addresses")
		}
	}
	if req.Placement != nil && len(req.Placement.Nodes) > 0 {
		return pve("placement.nodes")
	}
	for i, f := range req.Flavors {
		if f.Storage != "" {
			return pve(fmt.Sprintf("flavors[%d].storage", i))
		}
	}
	return nil
}

// locationZone is a location the pool may use, its network zone, and the
// field that named it ("" for the account's location).
type locationZone struct {
	location, zone, path string
}

// locationZones reads the network zone of each location (GET /locations):
// the pool's, else the account's. Errors: INVALID_INPUT naming
// placement.locations[i] for an unknown or repeated one.
func (c *client) locationZones(ctx context.Context, s *session, locations []string) ([]locationZone, error) {
	all, err := s.api.Location.All(ctx)
	if err != nil {
		return nil, err
	}
	zoneOf := make(map[string]string, len(all))
	for _, l := range all {
		zoneOf[l.Name] = string(l.NetworkZone)
	}
	if len(locations) == 0 {
		return []locationZone{{location: c.location, zone: zoneOf[c.location]}}, nil
	}
	out := make([]locationZone, 0, len(locations))
	for i, l := range locations {
		path := fmt.Sprintf("placement.locations[%d]", i)
		switch zone, known := zoneOf[l]; {
		case !known:
			return nil, api.InvalidInput(path, "location %q does not exist (known: %v)", l, slices.Sorted(maps.Keys(zoneOf)))
		case slices.Index(locations, l) != i:
			return nil, api.InvalidInput(path, "location %q is listed twice", l)
		default:
			out = append(out, locationZone{location: l, zone: zone, path: path})
		}
	}
	return out, nil
}

// checkNetworks checks each attachment of n against the project's
// networks and the zones the pool's servers may land in.
func checkNetworks(ctx context.Context, s *session, n *api.PoolNetwork, zones []locationZone) error {
	seen := map[int64]bool{}
	atCreate := rangedAtCreate(n)
	for i, a := range n.PrivateNetworks {
		path := fmt.Sprintf("network.privateNetworks[%d]", i)
		found, err := resolveNetwork(ctx, s, a.Network)
		if err != nil {
			return err
		}
		switch {
		case found == nil:
			return api.InvalidInput(path+".network", "the project has no network %q", a.Network)
		case seen[found.ID]:
			return api.InvalidInput(path+".network", "network %q is listed twice", a.Network)
		}
		seen[found.ID] = true
		for _, z := range zones {
			if !slices.ContainsFunc(found.Subnets, func(sn hcloud.NetworkSubnet) bool { return string(sn.NetworkZone) == z.zone }) {
				return api.InvalidInput(path+".network", "network %q has no subnet in network zone %s of location %s%s",
					a.Network, z.zone, z.location, pathNote(z.path))
			}
		}
		if a.IPRange != "" {
			if err := checkIPRange(path+".ipRange", a, found, zones, i == atCreate); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkIPRange checks that an attachment's ipRange is a subnet of network
// n in the zone of every location the pool may use; with first (it joins
// in POST /servers), n's first subnet there.
func checkIPRange(path string, a api.NetworkAttachment, n *hcloud.Network, zones []locationZone, first bool) error {
	want, err := netip.ParsePrefix(a.IPRange)
	if err != nil {
		return api.InvalidInput(path, "ipRange must be a CIDR such as 10.0.1.0/24")
	}
	if want != want.Masked() {
		return api.InvalidInput(path, "ipRange %s is not a network address; did you mean %s", a.IPRange, want.Masked())
	}
	for _, z := range zones {
		var ranges []string
		for _, sn := range n.Subnets {
			if string(sn.NetworkZone) == z.zone && sn.IPRange != nil {
				ranges = append(ranges, sn.IPRange.String())
			}
		}
		switch {
		case first && (len(ranges) == 0 || ranges[0] != want.Masked().String()):
			return api.InvalidInput(path, "ipRange %s must be network %q's first subnet in network zone %s (location %s): "+
				"a server without public IPs joins its first network in POST /servers, which takes no subnet; "+
				"add a network without ipRange, or turn a public IP on", a.IPRange, a.Network, z.zone, z.location)
		case !slices.Contains(ranges, want.Masked().String()):
			return api.InvalidInput(path, "ipRange %s is not a subnet of network %q in network zone %s (location %s); its subnets there: %v",
				a.IPRange, a.Network, z.zone, z.location, ranges)
		}
	}
	return nil
}

// pathNote names the field a location came from, if any.
func pathNote(path string) string {
	if path == "" {
		return " (the account's)"
	}
	return " (" + path + ")"
}
