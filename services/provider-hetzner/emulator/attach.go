package emulator

import (
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// RouteAttachToNetwork is the route key of POST
// /servers/{id}/actions/attach_to_network.
const RouteAttachToNetwork = "POST /servers/{id}/actions/attach_to_network"

// cmdAttachToNetwork is the command of an attach_to_network action.
const cmdAttachToNetwork = "attach_to_network"

// attachToNetwork serves POST /servers/{id}/actions/attach_to_network
// {network, ip?, alias_ips?, ip_range?} → 201 {action} (command
// attach_to_network, resources the server and the network). The server
// gets an address of the network at once (private_net lists it, as the
// POST /servers reply lists the networks its next attach_to_network
// actions join) and is locked until the action ends after ActionDuration;
// an action that fails (FailNextAction("attach_to_network", …)) takes the
// address back. The address is ip when given, else the next free one of
// the subnet ip_range names, else of the network's first subnet in the
// server's network zone with a free address (as POST /servers picks it).
// Refusals, nothing changed:
//   - 400 json_error: a body that is not JSON; 400 invalid_input: network
//     missing;
//   - 404 not_found: no such server;
//   - 422 invalid_input naming network (no such network), ip_range (not a
//     CIDR, or not a subnet of the network) or ip (not an IPv4 address);
//   - 423 locked: another action of the server runs;
//   - 422 server_already_attached: the server is in the network;
//   - 422 no_subnet_available: the network (or the subnet of ip_range)
//     has no subnet in the server's network zone (a network in another
//     zone), or no free address there;
//   - 422 ip_not_available: ip is taken, the gateway, or outside the
//     subnets the server may join.
//
// Guess: the reference names the 422 codes but not the answers to an
// unknown network, an ip_range that is no subnet or a malformed ip (the
// emulator says invalid_input naming the field, as POST /servers does for
// unknown ids), nor which code an ip outside the subnets gets (here
// ip_not_available), nor whether a locked server answers 423 (the
// emulator's reading, as for every server action), nor when private_net
// shows the new address (at once). alias_ips are accepted and not kept.
func (e *Emulator) attachToNetwork(r *http.Request, raw string) reply {
	var req schema.ServerActionAttachToNetworkRequest
	if rep, valid := decodeJSON(r, &req, false); !valid {
		return rep
	}
	if req.Network == 0 {
		return invalidInput(http.StatusBadRequest, []fieldError{field("network", "Missing data for required field.")})
	}
	return e.withServer(raw, func(srv *server, now time.Time) reply {
		n := e.st.net.networks[req.Network]
		if n == nil {
			return invalidInput(http.StatusUnprocessableEntity, []fieldError{field("network", "network not found")})
		}
		subnets, fields := attachSubnets(n, &req)
		if len(fields) > 0 {
			return invalidInput(http.StatusUnprocessableEntity, fields)
		}
		switch {
		case srv.running > 0:
			return lockedReply(srv)
		case srv.attachedTo(n.id):
			return errorReply(http.StatusUnprocessableEntity, "server_already_attached",
				fmt.Sprintf("server %d is already attached to network %d", srv.id, n.id), nil)
		}
		ip, rep := e.attachAddrLocked(n, subnets, srv.loc.NetworkZone, req.IP)
		if rep != nil {
			return *rep
		}
		srv.privateNets = append(srv.privateNets, privateNet{network: n.id, ip: ip})
		a := e.startActionLocked(cmdAttachToNetwork, srv, now)
		a.networkID = n.id
		return reply{status: http.StatusCreated, body: schema.ServerActionAttachToNetworkResponse{Action: a.toSchema(now)}}
	})
}

// attachSubnets are the subnets of n an attach may take an address from:
// the one req.IPRange names, else all; fields name a malformed ip_range or
// ip, or an ip_range that is no subnet of n.
func attachSubnets(n *network, req *schema.ServerActionAttachToNetworkRequest) ([]subnet, []fieldError) {
	if req.IP != nil {
		if a, err := netip.ParseAddr(*req.IP); err != nil || !a.Is4() {
			return nil, []fieldError{field("ip", "ip must be an IPv4 address")}
		}
	}
	if req.IPRange == nil {
		return n.subnets, nil
	}
	p, err := netip.ParsePrefix(*req.IPRange)
	if err != nil {
		return nil, []fieldError{field("ip_range", "ip_range must be a CIDR")}
	}
	for _, s := range n.subnets {
		if s.ipRange == p.Masked() {
			return []subnet{s}, nil
		}
	}
	return nil, []fieldError{field("ip_range", fmt.Sprintf("ip_range %s is not a subnet of network %d", *req.IPRange, n.id))}
}

// attachAddrLocked picks the address of an attach to n through subnets in
// zone: ip when given (free and inside one of them), else the next free
// one (see freeAddrLocked). Callers hold e.mu.
func (e *Emulator) attachAddrLocked(n *network, subnets []subnet, zone string, ip *string) (netip.Addr, *reply) {
	subnets = inZone(subnets, zone)
	if ip == nil || len(subnets) == 0 {
		a, found := e.freeAddrLocked(n, subnets)
		if !found {
			r := noSubnetReply(n, zone)
			return netip.Addr{}, &r
		}
		return a, nil
	}
	want := netip.MustParseAddr(*ip) // attachSubnets checked it
	used := e.usedAddrsLocked(n)
	for _, s := range subnets {
		if s.ipRange.Contains(want) && want != s.ipRange.Addr() && want != lastAddr(s.ipRange) && !used[want] {
			return want, nil
		}
	}
	r := errorReply(http.StatusUnprocessableEntity, "ip_not_available", fmt.Sprintf("ip %s is not available", want), nil)
	return netip.Addr{}, &r
}

// noSubnetReply is 422 no_subnet_available: n has no subnet in zone, or
// no free address there.
func noSubnetReply(n *network, zone string) reply {
	return errorReply(http.StatusUnprocessableEntity, "no_subnet_available",
		fmt.Sprintf("no subnet or IP available in network %d for network zone %s", n.id, zone), nil)
}

// detachFailedLocked takes back the address of a failed attach_to_network
// action a from srv. Callers hold e.mu.
func (srv *server) detachFailedLocked(a *action) {
	for i, p := range srv.privateNets {
		if p.network == a.networkID {
			srv.privateNets = append(srv.privateNets[:i:i], srv.privateNets[i+1:]...)
			return
		}
	}
}
