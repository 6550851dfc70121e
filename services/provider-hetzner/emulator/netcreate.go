package emulator

import (
	"fmt"
	"net/http"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// serverNet is the network part of a POST /servers: the networks,
// firewalls and placement group it names, found, and the public families
// it enables.
type serverNet struct {
	networks   []*network
	firewalls  []int64
	group      *placementGroup
	ipv4, ipv6 bool
}

// serverNetLocked finds the networks, firewalls and placement group of
// req: an unknown one is a field error (422 invalid_input with the other
// fields). public_net absent enables both families.
//
// Guess: the reference does not say how POST /servers answers an unknown
// network, firewall or placement group id; the emulator reports it as
// invalid input naming the field.
func (e *Emulator) serverNetLocked(req *schema.ServerCreateRequest) (serverNet, []fieldError) {
	ns := &e.st.net
	out := serverNet{ipv4: true, ipv6: true}
	var fields []fieldError
	for i, id := range req.Networks {
		n := ns.networks[id]
		if n == nil {
			fields = append(fields, field(fmt.Sprintf("networks[%d]", i), "network not found"))
			continue
		}
		out.networks = append(out.networks, n)
	}
	for i, f := range req.Firewalls {
		if ns.firewalls[f.Firewall] == nil {
			fields = append(fields, field(fmt.Sprintf("firewalls[%d].firewall", i), "firewall not found"))
			continue
		}
		out.firewalls = append(out.firewalls, f.Firewall)
	}
	if req.PlacementGroup != 0 {
		if out.group = ns.placementGroups[req.PlacementGroup]; out.group == nil {
			fields = append(fields, field("placement_group", "placement group not found"))
		}
	}
	if req.PublicNet != nil {
		out.ipv4, out.ipv6 = req.PublicNet.EnableIPv4, req.PublicNet.EnableIPv6
	}
	return out, fields
}

// checkPlacementLocked answers what keeps a server of sn out of loc, or
// nil, ok: location full (412), no public IP and no network, a firewall
// on a server without public interface, a network without a subnet (or a
// free address) in loc's zone, a placement group whose servers are in
// another location or that is full (all 422). It
// returns the private addresses to assign, one per network.
func (e *Emulator) checkPlacementLocked(sn *serverNet, loc *location) ([]privateNet, *reply) {
	fail := func(r reply) ([]privateNet, *reply) { return nil, &r }
	if e.st.net.full[loc.Name] {
		return fail(errorReply(http.StatusPreconditionFailed, "resource_unavailable", "error during placement", nil))
	}
	if !sn.ipv4 && !sn.ipv6 && len(sn.networks) == 0 {
		// Guess: the CLI refuses this before calling; the emulator's API
		// answers invalid input on public_net.
		return fail(invalidInput(http.StatusUnprocessableEntity,
			[]fieldError{field("public_net", "a server without public IPv4 and IPv6 needs a private network")}))
	}
	if len(sn.firewalls) > 0 && !sn.ipv4 && !sn.ipv6 {
		// Guess: private_net_only_server, as apply answers it (firewalls
		// act on the public interface only).
		return fail(errorReply(http.StatusUnprocessableEntity, "private_net_only_server",
			"firewalls cannot be applied to a server without public interface", nil))
	}
	var nets []privateNet
	for _, n := range sn.networks {
		ip, found := e.allocateLocked(n, loc.NetworkZone)
		for _, p := range nets {
			// Guess: two entries of one network answer as attaching a
			// server twice does (server_already_attached).
			if p.network == n.id {
				return fail(errorReply(http.StatusUnprocessableEntity, "server_already_attached", "server is already attached to the network", nil))
			}
		}
		if !found {
			// Guess: as attach_to_network answers it.
			return fail(noSubnetReply(n, loc.NetworkZone))
		}
		nets = append(nets, privateNet{network: n.id, ip: ip})
	}
	if g := sn.group; g != nil && e.groupLocationLocked(g.id) != nil && e.groupLocationLocked(g.id) != loc {
		// Guess: a spread group spreads over the hosts of one site, so its
		// servers share a location (third parties say so); the emulator
		// refuses another with placement_error.
		return fail(errorReply(http.StatusUnprocessableEntity, "placement_error",
			fmt.Sprintf("placement group %d has its servers in %s", g.id, e.groupLocationLocked(g.id).Name), nil))
	}
	if g := sn.group; g != nil && len(e.groupServersLocked(g.id)) >= MaxPlacementGroupServers {
		// Guess: 422 (the reference calls the status Unconfirmed); the code
		// and message are the API's.
		return fail(errorReply(http.StatusUnprocessableEntity, "placement_group_member_limit_reached",
			fmt.Sprintf("placement group with ID %d contains already %d servers", g.id, MaxPlacementGroupServers), nil))
	}
	return nets, nil
}

// groupLocationLocked is where group id's servers are (nil: it has none).
func (e *Emulator) groupLocationLocked(id int64) *location {
	for _, srv := range e.st.order {
		if srv.placementGroup == id {
			return srv.loc
		}
	}
	return nil
}

// attachLocked gives srv the network part of its create.
func (srv *server) attachLocked(sn *serverNet, nets []privateNet) {
	srv.privateNets = nets
	srv.firewalls = sn.firewalls
	if sn.group != nil {
		srv.placementGroup = sn.group.id
	}
	if !sn.ipv4 {
		srv.ipv4 = ""
	}
	if !sn.ipv6 {
		srv.ipv6 = ""
	}
}

// PrivateIP is srv's address in network id ("" when not attached), for tests.
func (s ServerSnapshot) PrivateIP(network int64) string { return s.PrivateIPs[network] }
