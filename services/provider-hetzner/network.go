package hetzner

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
)

// Pool network on Hetzner Cloud (capabilities network.private,
// network.firewalls, network.publicIP): all of it travels in the one POST
// /servers, so a create stays one server per idempotency key.
//
//   - privateNetworks → "networks": [ids]. A network named by name is
//     looked up (GET /networks?name=…) at every create; by id it costs
//     nothing. The server gets an address of the network's first subnet
//     in its location's network zone (Guess: the reference says "a subnet
//     in its zone"). An ipRange therefore has to be that subnet: checkpool
//     refuses any other (the API's way to pick another subnet,
//     attach_to_network with ip_range, is a second call after the server
//     exists, which this provider does not make).
//   - firewalls → "firewalls": [{"firewall": id}], names looked up
//     (GET /firewalls?name=…) like networks.
//   - publicIPv4 / publicIPv6 → "public_net": {enable_ipv4, enable_ipv6},
//     sent only when the pool turns one off (nil means on). A server
//     without public IPv4 reports its private addresses only.

// refID reads a reference as an id: a positive integer is an id.
func refID(ref string) (int64, bool) {
	id, err := strconv.ParseInt(ref, 10, 64)
	return id, err == nil && id > 0
}

// resolveNetwork finds the network of ref (id or name): nil, nil when the
// project has none.
func resolveNetwork(ctx context.Context, s *session, ref string) (*hcloud.Network, error) {
	if id, ok := refID(ref); ok {
		n, _, err := s.api.Network.GetByID(ctx, id)
		if hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
			return nil, nil
		}
		return n, err
	}
	n, _, err := s.api.Network.GetByName(ctx, ref)
	return n, err
}

// resolveFirewall finds the firewall of ref (id or name): nil, nil when
// the project has none.
func resolveFirewall(ctx context.Context, s *session, ref string) (*hcloud.Firewall, error) {
	if id, ok := refID(ref); ok {
		f, _, err := s.api.Firewall.GetByID(ctx, id)
		if hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
			return nil, nil
		}
		return f, err
	}
	f, _, err := s.api.Firewall.GetByName(ctx, ref)
	return f, err
}

// networkOpts sets the network part of opts from the pool's network: ids
// as they are, names looked up (one GET each). Errors: INVALID_INPUT
// naming machine.network.privateNetworks[i].network or
// machine.network.firewalls[i] when a name names nothing (the pool was
// checked at create; the network or firewall went since), the API's.
func networkOpts(ctx context.Context, s *session, n *api.PoolNetwork, opts *hcloud.ServerCreateOpts) error {
	if n == nil {
		return nil
	}
	for i, a := range n.PrivateNetworks {
		id, ok := refID(a.Network)
		if !ok {
			net, err := resolveNetwork(ctx, s, a.Network)
			if err != nil {
				return err
			}
			if net == nil {
				return api.InvalidInput(fmt.Sprintf("machine.network.privateNetworks[%d].network", i),
					"the project has no network %q", a.Network)
			}
			id = net.ID
		}
		opts.Networks = append(opts.Networks, &hcloud.Network{ID: id})
	}
	for i, ref := range n.Firewalls {
		id, ok := refID(ref)
		if !ok {
			f, err := resolveFirewall(ctx, s, ref)
			if err != nil {
				return err
			}
			if f == nil {
				return api.InvalidInput(fmt.Sprintf("machine.network.firewalls[%d]", i), "the project has no firewall %q", ref)
			}
			id = f.ID
		}
		opts.Firewalls = append(opts.Firewalls, &hcloud.ServerCreateFirewall{Firewall: hcloud.Firewall{ID: id}})
	}
	if v4, v6 := on(n.PublicIPv4), on(n.PublicIPv6); !v4 || !v6 {
		opts.PublicNet = &hcloud.ServerCreatePublicNet{EnableIPv4: v4, EnableIPv6: v6}
	}
	return nil
}

// on is a public IP switch's value: nil means on.
func on(b *bool) bool { return b == nil || *b }
