package hetzner

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Pool network on Hetzner Cloud (capabilities network.private,
// network.firewalls, network.publicIP).
//
//   - privateNetworks → "networks": [ids] of POST /servers for those
//     without ipRange: the server gets an address of a subnet of the
//     location's network zone (the API picks which). A network named by
//     name is looked up (GET /networks?name=…) at every create; by id it
//     costs nothing.
//   - privateNetworks with ipRange → POST /servers/{id}/actions/
//     attach_to_network {network, ip_range} once the server is unlocked
//     (its create actions ended; see attachRanged): POST /servers takes
//     network ids only, and ip_range is how the API picks a subnet. The
//     one exception is a server without public IPs whose attachments all
//     have an ipRange: the API refuses a server with no public IP and no
//     network, so the first (rangedAtCreate) travels in POST /servers and
//     its ipRange must be the network's first subnet in the zone
//     (checkpool; Guess: POST /servers attaches through the first subnet
//     with a free address).
//   - firewalls → "firewalls": [{"firewall": id}], names looked up
//     (GET /firewalls?name=…) like networks.
//   - publicIPv4 / publicIPv6 → "public_net": {enable_ipv4, enable_ipv6},
//     sent only when the pool turns one off (nil means on). A server
//     without public IPv4 reports its private addresses only.

// rangedNet is an attachment of the pool's network with an ipRange,
// resolved: the network's id, the range, whether it joins in POST
// /servers (rangedAtCreate) instead of attach_to_network, and its field.
type rangedNet struct {
	network  int64
	ipRange  *net.IPNet
	atCreate bool
	path     string
}

// rangedAtCreate is the index of the attachment with an ipRange that
// joins in POST /servers, or -1: only a server without public IPs whose
// attachments all have an ipRange needs one (the API refuses a server
// with no public IP and no network).
func rangedAtCreate(n *api.PoolNetwork) int {
	if n == nil || on(n.PublicIPv4) || on(n.PublicIPv6) {
		return -1
	}
	for _, a := range n.PrivateNetworks {
		if a.IPRange == "" {
			return -1
		}
	}
	if len(n.PrivateNetworks) == 0 {
		return -1
	}
	return 0
}

// hasRanges reports whether an attachment of n has an ipRange.
func hasRanges(n *api.PoolNetwork) bool {
	return n != nil && slices.ContainsFunc(n.PrivateNetworks, func(a api.NetworkAttachment) bool { return a.IPRange != "" })
}

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
// as they are, names looked up (one GET each); the attachments with an
// ipRange are returned (see privateNets). Errors: those of privateNets,
// INVALID_INPUT naming machine.network.firewalls[i] when a name names
// nothing (the pool was checked at create; the firewall went since), the
// API's.
func networkOpts(ctx context.Context, s *session, n *api.PoolNetwork, opts *hcloud.ServerCreateOpts) ([]rangedNet, error) {
	if n == nil {
		return nil, nil
	}
	ranged, err := privateNets(ctx, s, n, opts)
	if err != nil {
		return nil, err
	}
	for i, ref := range n.Firewalls {
		id, ok := refID(ref)
		if !ok {
			f, err := resolveFirewall(ctx, s, ref)
			if err != nil {
				return nil, err
			}
			if f == nil {
				return nil, api.InvalidInput(fmt.Sprintf("machine.network.firewalls[%d]", i), "the project has no firewall %q", ref)
			}
			id = f.ID
		}
		opts.Firewalls = append(opts.Firewalls, &hcloud.ServerCreateFirewall{Firewall: hcloud.Firewall{ID: id}})
	}
	if v4, v6 := on(n.PublicIPv4), on(n.PublicIPv6); !v4 || !v6 {
		opts.PublicNet = &hcloud.ServerCreatePublicNet{EnableIPv4: v4, EnableIPv6: v6}
	}
	return ranged, nil
}

// privateNets resolves n's private networks (names looked up, one GET
// each), adds those that join at create to opts.Networks (opts nil: none
// added) and returns those with an ipRange. Errors: INVALID_INPUT naming
// machine.network.privateNetworks[i].network when a name names nothing
// (the network went since checkpool) or .ipRange when it is not a CIDR,
// the API's.
func privateNets(ctx context.Context, s *session, n *api.PoolNetwork, opts *hcloud.ServerCreateOpts) ([]rangedNet, error) {
	var ranged []rangedNet
	atCreate := rangedAtCreate(n)
	for i, a := range n.PrivateNetworks {
		path := fmt.Sprintf("machine.network.privateNetworks[%d]", i)
		id, ok := refID(a.Network)
		if !ok {
			found, err := resolveNetwork(ctx, s, a.Network)
			if err != nil {
				return nil, err
			}
			if found == nil {
				return nil, api.InvalidInput(path+".network", "the project has no network %q", a.Network)
			}
			id = found.ID
		}
		if a.IPRange != "" {
			_, r, err := net.ParseCIDR(a.IPRange)
			if err != nil {
				return nil, api.InvalidInput(path+".ipRange", "ipRange must be a CIDR such as 10.0.1.0/24")
			}
			ranged = append(ranged, rangedNet{network: id, ipRange: r, atCreate: i == atCreate, path: path})
		}
		if (a.IPRange == "" || i == atCreate) && opts != nil {
			opts.Networks = append(opts.Networks, &hcloud.Network{ID: id})
		}
	}
	return ranged, nil
}

// attachRanged attaches srv, which Create found or made, to each network
// of ranged it is not in yet (POST /servers/{id}/actions/attach_to_network
// {network, ip_range}, then the action waited for) and returns the server
// as it then is, unlocked. While the server is locked (its create
// actions, or an attach an earlier attempt sent, still run; 423 locked)
// it is read again (GET /servers/{id}) every poll interval. An attach
// answered 422 server_already_attached (a concurrent attempt of the key
// attached it) is done. So a retry, after a crash or a lost reply, at
// any point attaches each network once.
//
// Errors: INVALID_STATE naming machine.network.privateNetworks[i].ipRange
// when the server's address in the network is outside the ipRange (it
// was attached otherwise); PROVIDER_ERROR (the attach's refusal, e.g. 422
// no_subnet_available when the subnet is full, or its action's failure;
// code attach_unconfirmed when the API answered server_already_attached
// but the server does not list the network: the next attempt tries
// again); NOT_FOUND when the server went meanwhile; UNAVAILABLE when ctx
// ends first.
func (c *client) attachRanged(ctx context.Context, s *session, srv *hcloud.Server, ranged []rangedNet) (*hcloud.Server, error) {
	if len(ranged) == 0 {
		return srv, nil
	}
	already := map[int64]bool{} // attach answered server_already_attached
	for {
		var next *rangedNet
		for i := range ranged {
			r := &ranged[i]
			switch {
			case r.atCreate || srv.PrivateNetFor(&hcloud.Network{ID: r.network}) != nil:
			case already[r.network]:
				return nil, providerError(http.StatusUnprocessableEntity, "attach_unconfirmed",
					"hetzner-cloud: attach of server %d to network %d answered server_already_attached, but the server does not list it",
					srv.ID, r.network)
			case next == nil:
				next = r
			}
		}
		switch {
		case next == nil && !srv.Locked:
			return srv, checkRanges(srv, ranged)
		case next == nil || srv.Locked:
			if err := provider.Sleep(ctx, s.call.Clock, s.set.pollInterval); err != nil {
				return nil, err
			}
		default:
			a, _, err := s.api.Server.AttachToNetwork(ctx, srv, hcloud.ServerAttachToNetworkOpts{
				Network: &hcloud.Network{ID: next.network}, IPRange: next.ipRange})
			switch {
			case err == nil:
				s.call.Log.Info().Int64("network", next.network).Str("ip_range", next.ipRange.String()).Msg("attaching the server to its network")
				if err := s.wait(ctx, c, a); err != nil {
					return nil, err
				}
			case hcloud.IsError(err, hcloud.ErrorCodeServerAlreadyAttached):
				already[next.network] = true
			case hcloud.IsError(err, hcloud.ErrorCodeLocked):
				if err := provider.Sleep(ctx, s.call.Clock, s.set.pollInterval); err != nil {
					return nil, err
				}
			default:
				return nil, err
			}
		}
		id := srv.ID
		got, _, err := s.api.Server.GetByID(ctx, id)
		if err != nil {
			return nil, err
		}
		if got == nil {
			return nil, api.NotFound("server", strconv.FormatInt(id, 10))
		}
		srv = got
	}
}

// checkRanges refuses a server whose address in a network of ranged is
// outside the attachment's ipRange. Errors: INVALID_STATE naming the
// attachment's ipRange.
func checkRanges(srv *hcloud.Server, ranged []rangedNet) error {
	for _, r := range ranged {
		p := srv.PrivateNetFor(&hcloud.Network{ID: r.network})
		if p == nil || !r.ipRange.Contains(p.IP) {
			got := "no address"
			if p != nil {
				got = p.IP.String()
			}
			return api.Errorf(api.CodeInvalidState, "hetzner-cloud: server %d has %s in network %d, outside ipRange %s",
				srv.ID, got, r.network, r.ipRange).WithPath(r.path + ".ipRange")
		}
	}
	return nil
}

// on is a public IP switch's value: nil means on.
func on(b *bool) bool { return b == nil || *b }
