package emulator

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// The project's network resources: private networks with subnets,
// firewalls and spread placement groups (../shared/reference/hetzner-cloud-api.md,
// "Private networks and subnets", "Firewalls", "Placement groups").
// Membership (a network's servers, a firewall's applied_to, a group's
// servers) is derived from the servers, so a server gone is gone from all.

// MaxPlacementGroupServers is how many servers a spread placement group
// holds (the API's limit).
const MaxPlacementGroupServers = 10

// Network resource id ranges; arbitrary, like the servers'.
const (
	firstNetworkID        = 4_000_001
	firstFirewallID       = 7_000_001
	firstPlacementGroupID = 300_001
	firstPrimaryIPID      = 60_000_001
)

// network is one private network.
type network struct {
	id      int64
	name    string
	ipRange netip.Prefix
	subnets []subnet
	labels  map[string]string
	created time.Time
}

// subnet is one subnet of a network (type cloud).
type subnet struct {
	ipRange netip.Prefix
	zone    string
}

// firewall is one firewall; its rules are kept as sent.
type firewall struct {
	id      int64
	name    string
	labels  map[string]string
	rules   []schema.FirewallRule
	created time.Time
}

// placementGroup is one spread placement group.
type placementGroup struct {
	id      int64
	name    string
	labels  map[string]string
	created time.Time
}

// privateNet is a server's attachment to a network.
type privateNet struct {
	network int64
	ip      netip.Addr
}

// netState is the network part of state; guarded by Emulator.mu.
type netState struct {
	networks        map[int64]*network
	firewalls       map[int64]*firewall
	placementGroups map[int64]*placementGroup
	// full holds the locations where every POST /servers answers 412
	// resource_unavailable (SetLocationFull).
	full map[string]bool

	nextNetworkID, nextFirewallID, nextPlacementGroupID int64
}

func newNetState() netState {
	return netState{
		networks: map[int64]*network{}, firewalls: map[int64]*firewall{},
		placementGroups: map[int64]*placementGroup{}, full: map[string]bool{},
		nextNetworkID: firstNetworkID, nextFirewallID: firstFirewallID, nextPlacementGroupID: firstPlacementGroupID,
	}
}

// byIDOrName finds a resource of m by numeric id or exact name.
func byIDOrName[T any](m map[int64]*T, ref string, name func(*T) string) *T {
	if id, valid := parseID(ref); valid && m[id] != nil {
		return m[id]
	}
	for _, id := range slices.Sorted(maps.Keys(m)) {
		if name(m[id]) == ref {
			return m[id]
		}
	}
	return nil
}

// sortedValues returns m's values by ascending id.
func sortedValues[T any](m map[int64]*T) []*T {
	out := make([]*T, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[id])
	}
	return out
}

// labelled is a network resource as the list filters see it: its name
// and labels.
type labelled interface {
	nameAndLabels() (string, map[string]string)
}

func (n *network) nameAndLabels() (string, map[string]string)        { return n.name, n.labels }
func (f *firewall) nameAndLabels() (string, map[string]string)       { return f.name, f.labels }
func (g *placementGroup) nameAndLabels() (string, map[string]string) { return g.name, g.labels }

// listLabelledLocked is the page q asks for of the resources of m (by
// ascending id) that match q's name and label_selector filters and keep
// (nil keeps all), each rendered by conv; valid is false with a 400
// invalid_input answer for a malformed label_selector. Callers hold e.mu.
func listLabelledLocked[P labelled, S any](e *Emulator, q url.Values, m map[int64]P, keep func(P) bool,
	conv func(P) S) (out []S, pages meta, rep reply, valid bool) {
	sel, rep, valid := e.querySelectorLocked(q)
	if !valid {
		return nil, meta{}, rep, false
	}
	var matched []P
	for _, id := range slices.Sorted(maps.Keys(m)) {
		name, labels := m[id].nameAndLabels()
		if (q.Get("name") == "" || name == q.Get("name")) && (keep == nil || keep(m[id])) && sel.Matches(labels) {
			matched = append(matched, m[id])
		}
	}
	out, pages = pageOf(matched, q, conv)
	return out, pages, reply{}, true
}

// getByID serves GET /<resources>/{id}: the resource of m (read with e.mu
// held and every action settled) with the path id raw, answered by
// answer; 404 not_found naming what when there is none.
func getByID[T any](e *Emulator, raw, what string, m func(*netState) map[int64]*T, answer func(*T) any) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	id, _ := parseID(raw)
	v := m(&e.st.net)[id]
	if v == nil {
		return notFound(what)
	}
	return ok(answer(v))
}

// createNamed serves POST /<resources>: the body decoded into a Req, added
// by add (with e.mu held) and rendered by created → 201; 409
// uniqueness_error ("<what> name is already used") when the only problem
// is a taken name, 422 invalid_input for any other.
func createNamed[Req, T any](e *Emulator, r *http.Request, what string, add func(Req, time.Time) (*T, []fieldError),
	created func(*T) any) reply {
	var req Req
	if rep, valid := decodeJSON(r, &req, false); !valid {
		return rep
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	v, fields := add(req, e.clock.Now())
	if taken(fields) {
		return errorReply(http.StatusConflict, "uniqueness_error", what+" name is already used", fieldDetails{Fields: fields})
	}
	if len(fields) > 0 {
		return invalidInput(http.StatusUnprocessableEntity, fields)
	}
	return reply{status: http.StatusCreated, body: created(v)}
}

// AddNetwork creates a private network named name with ip range cidr and
// one cloud subnet per entry of subnets ("<cidr>@<network zone>", e.g.
// "10.0.1.0/24@eu-central"), as POST /networks would, and returns its id.
// It panics on a malformed range: it is for test setup.
func (e *Emulator) AddNetwork(name, cidr string, subnets ...string) int64 {
	req := schema.NetworkCreateRequest{Name: name, IPRange: cidr}
	for _, s := range subnets {
		r, zone, _ := strings.Cut(s, "@")
		req.Subnets = append(req.Subnets, schema.NetworkSubnet{Type: "cloud", IPRange: r, NetworkZone: zone})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n, fields := e.addNetworkLocked(req, e.clock.Now())
	if len(fields) > 0 {
		panic(fmt.Sprintf("emulator: AddNetwork %s: %v", name, fields))
	}
	return n.id
}

// AddFirewall creates a firewall named name without rules (all inbound
// dropped) and returns its id.
func (e *Emulator) AddFirewall(name string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	f, fields := e.addFirewallLocked(schema.FirewallCreateRequest{Name: name}, e.clock.Now())
	if len(fields) > 0 {
		panic(fmt.Sprintf("emulator: AddFirewall %s: %v", name, fields))
	}
	return f.id
}

// SetLocationFull makes every POST /servers in location answer 412
// resource_unavailable ("error during placement") while full is true,
// whatever the server type: a location out of capacity.
//
// Guess: the catalogue (server type prices, offers) keeps showing the
// location as available, as the real catalogue does not follow capacity
// moment by moment.
func (e *Emulator) SetLocationFull(location string, full bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if full {
		e.st.net.full[location] = true
	} else {
		delete(e.st.net.full, location)
	}
}

// PlacementGroupSnapshot is a placement group as the emulator holds it.
type PlacementGroupSnapshot struct {
	ID      int64             `json:"id"`
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels"`
	Servers []int64           `json:"servers"`
}

// PlacementGroups returns every placement group by ascending id, with its
// member servers (servers still deleting included, as the API counts them).
func (e *Emulator) PlacementGroups() []PlacementGroupSnapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	out := []PlacementGroupSnapshot{}
	for _, g := range sortedValues(e.st.net.placementGroups) {
		out = append(out, PlacementGroupSnapshot{ID: g.id, Name: g.name, Labels: maps.Clone(g.labels), Servers: e.groupServersLocked(g.id)})
	}
	return out
}

// --- networks ---

// addNetworkLocked validates and stores a network create. Callers hold e.mu.
func (e *Emulator) addNetworkLocked(req schema.NetworkCreateRequest, now time.Time) (*network, []fieldError) {
	ns := &e.st.net
	var fields []fieldError
	if req.Name == "" {
		fields = append(fields, field("name", "Missing data for required field."))
	}
	r, err := netip.ParsePrefix(req.IPRange)
	if err != nil || !r.Addr().Is4() || !r.Addr().IsPrivate() || r.Bits() > 24 || r.Masked() != r {
		fields = append(fields, field("ip_range", "ip_range must be a private (RFC 1918) IPv4 network of at least /24"))
	}
	n := &network{name: req.Name, ipRange: r, labels: map[string]string{}, created: now.UTC().Truncate(time.Second)}
	// Guess: a bad subnet (type, range, overlap, zone) is 422 invalid_input
	// naming subnets[i].<field>; the reference gives the rules, not the
	// answer. A subnet needs its ip_range here (the API picks a free /24
	// when it is omitted; not modelled).
	for i, s := range req.Subnets {
		sr, err := netip.ParsePrefix(s.IPRange)
		name := fmt.Sprintf("subnets[%d].ip_range", i)
		switch {
		case s.Type != "cloud" && s.Type != "server":
			fields = append(fields, field(fmt.Sprintf("subnets[%d].type", i), "type must be cloud"))
		case err != nil || sr.Masked() != sr || sr.Bits() > 30 || !r.Contains(sr.Addr()) || sr.Bits() < r.Bits():
			fields = append(fields, field(name, "ip_range must be a subnet of the network's ip_range, at most /30"))
		case n.overlaps(sr):
			fields = append(fields, field(name, "subnets overlap"))
		case len(n.subnets) > 0 && n.subnets[0].zone != s.NetworkZone:
			// Guess: the FAQ says all subnets of a network are in one zone;
			// the emulator refuses a second zone as invalid input.
			fields = append(fields, field(fmt.Sprintf("subnets[%d].network_zone", i), "all subnets of a network must be in one network zone"))
		case !e.knownZoneLocked(s.NetworkZone):
			fields = append(fields, field(fmt.Sprintf("subnets[%d].network_zone", i), "network zone not found"))
		default:
			n.subnets = append(n.subnets, subnet{ipRange: sr, zone: s.NetworkZone})
		}
	}
	if req.Labels != nil {
		n.labels = maps.Clone(*req.Labels)
		fields = append(fields, validateLabels(n.labels)...)
	}
	if byIDOrName(ns.networks, req.Name, func(n *network) string { return n.name }) != nil && req.Name != "" {
		fields = append(fields, field("name", "is already used"))
	}
	if len(fields) > 0 {
		return nil, fields
	}
	n.id = ns.nextNetworkID
	ns.nextNetworkID++
	ns.networks[n.id] = n
	return n, nil
}

// overlaps reports whether r overlaps one of n's subnets.
func (n *network) overlaps(r netip.Prefix) bool {
	for _, s := range n.subnets {
		if s.ipRange.Overlaps(r) {
			return true
		}
	}
	return false
}

// knownZoneLocked reports whether zone is a location's network zone.
func (e *Emulator) knownZoneLocked(zone string) bool {
	for _, l := range e.st.locations {
		if l.NetworkZone == zone {
			return true
		}
	}
	return false
}

// networkSchemaLocked renders n with the ids of its servers.
func (e *Emulator) networkSchemaLocked(n *network) schema.Network {
	out := schema.Network{
		ID: n.id, Name: n.name, Created: n.created, IPRange: n.ipRange.String(),
		Subnets: []schema.NetworkSubnet{}, Routes: []schema.NetworkRoute{}, Servers: []int64{},
		LoadBalancers: []int64{}, Labels: maps.Clone(n.labels),
	}
	for _, s := range n.subnets {
		// Guess: a cloud subnet's gateway is the network's first address.
		out.Subnets = append(out.Subnets, schema.NetworkSubnet{Type: "cloud", IPRange: s.ipRange.String(),
			NetworkZone: s.zone, Gateway: n.ipRange.Addr().Next().String()})
	}
	for _, srv := range e.st.order {
		if srv.attachedTo(n.id) {
			out.Servers = append(out.Servers, srv.id)
		}
	}
	return out
}

// attachedTo reports whether srv is attached to network id.
func (srv *server) attachedTo(id int64) bool {
	return slices.ContainsFunc(srv.privateNets, func(p privateNet) bool { return p.network == id })
}

// allocateLocked picks a server's address in n for POST /servers: the
// next free address of n's subnets in zone (freeAddrLocked). ok is false
// when n has no subnet in zone or they are full.
//
// Guess: POST /servers "networks" attaches through the network's first
// subnet (in subnet order) of the location's zone that has a free
// address.
func (e *Emulator) allocateLocked(n *network, zone string) (netip.Addr, bool) {
	return e.freeAddrLocked(n, inZone(n.subnets, zone))
}

// inZone are the subnets of network zone zone.
func inZone(subnets []subnet, zone string) []subnet {
	var out []subnet
	for _, s := range subnets {
		if s.zone == zone {
			out = append(out, s)
		}
	}
	return out
}

// usedAddrsLocked are the addresses of n no server may get: the
// network's first address (the gateway) and those servers hold.
func (e *Emulator) usedAddrsLocked(n *network) map[netip.Addr]bool {
	used := map[netip.Addr]bool{n.ipRange.Addr().Next(): true}
	for _, srv := range e.st.order {
		for _, p := range srv.privateNets {
			if p.network == n.id {
				used[p.ip] = true
			}
		}
	}
	return used
}

// freeAddrLocked is the first free address of subnets (in order) of n;
// false when they are full.
//
// Guess: addresses are handed out from a subnet's second address up (the
// first is kept, as the network's first address is the gateway), never
// its last (broadcast) address.
func (e *Emulator) freeAddrLocked(n *network, subnets []subnet) (netip.Addr, bool) {
	used := e.usedAddrsLocked(n)
	for _, s := range subnets {
		last := lastAddr(s.ipRange)
		for a := s.ipRange.Addr().Next(); s.ipRange.Contains(a) && a != last; a = a.Next() {
			if !used[a] {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

// lastAddr is the last (broadcast) address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// listNetworks serves GET /networks (filters: name, label_selector).
func (e *Emulator) listNetworks(r *http.Request, _ string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	out, m, rep, valid := listLabelledLocked(e, r.URL.Query(), e.st.net.networks, nil, e.networkSchemaLocked)
	if !valid {
		return rep
	}
	return ok(struct {
		Networks []schema.Network `json:"networks"`
		Meta     meta             `json:"meta"`
	}{out, m})
}

// getNetwork serves GET /networks/{id}.
func (e *Emulator) getNetwork(_ *http.Request, raw string) reply {
	return getByID(e, raw, "network", func(ns *netState) map[int64]*network { return ns.networks },
		func(n *network) any { return schema.NetworkGetResponse{Network: e.networkSchemaLocked(n)} })
}

// createNetwork serves POST /networks → 201 {network}; 422 invalid_input
// for a bad name, range or subnet, 409 uniqueness_error for a taken name.
//
// Guess: a taken name is 409 uniqueness_error, as for servers.
func (e *Emulator) createNetwork(r *http.Request, _ string) reply {
	return createNamed(e, r, "network", e.addNetworkLocked,
		func(n *network) any { return schema.NetworkCreateResponse{Network: e.networkSchemaLocked(n)} })
}

// taken reports whether the only problem is a taken name.
func taken(fields []fieldError) bool {
	return len(fields) == 1 && fields[0].Name == "name" && fields[0].Messages[0] == "is already used"
}

// --- firewalls ---

// addFirewallLocked validates and stores a firewall. Callers hold e.mu.
func (e *Emulator) addFirewallLocked(req schema.FirewallCreateRequest, now time.Time) (*firewall, []fieldError) {
	ns := &e.st.net
	var fields []fieldError
	switch {
	case req.Name == "" || len(req.Name) > 128:
		fields = append(fields, field("name", "name must be 1 to 128 characters"))
	case byIDOrName(ns.firewalls, req.Name, func(f *firewall) string { return f.name }) != nil:
		fields = append(fields, field("name", "is already used"))
	}
	f := &firewall{name: req.Name, labels: map[string]string{}, rules: []schema.FirewallRule{}, created: now.UTC().Truncate(time.Second)}
	for i, rr := range req.Rules {
		if rr.Direction != "in" && rr.Direction != "out" {
			fields = append(fields, field(fmt.Sprintf("rules[%d].direction", i), "direction must be in or out"))
			continue
		}
		f.rules = append(f.rules, schema.FirewallRule{Direction: rr.Direction, Protocol: rr.Protocol, Port: rr.Port,
			SourceIPs: append([]string{}, rr.SourceIPs...), DestinationIPs: append([]string{}, rr.DestinationIPs...),
			Description: rr.Description})
	}
	if req.Labels != nil {
		f.labels = maps.Clone(*req.Labels)
		fields = append(fields, validateLabels(f.labels)...)
	}
	if len(fields) > 0 {
		return nil, fields
	}
	f.id = ns.nextFirewallID
	ns.nextFirewallID++
	ns.firewalls[f.id] = f
	return f, nil
}

// firewallSchemaLocked renders f with the servers it is applied to.
func (e *Emulator) firewallSchemaLocked(f *firewall) schema.Firewall {
	out := schema.Firewall{ID: f.id, Name: f.name, Labels: maps.Clone(f.labels), Created: f.created,
		Rules: slices.Clone(f.rules), AppliedTo: []schema.FirewallResource{}}
	for _, srv := range e.st.order {
		if slices.Contains(srv.firewalls, f.id) {
			out.AppliedTo = append(out.AppliedTo, schema.FirewallResource{Type: "server", Server: &schema.FirewallResourceServer{ID: srv.id}})
		}
	}
	return out
}

// listFirewalls serves GET /firewalls (filters: name, label_selector).
func (e *Emulator) listFirewalls(r *http.Request, _ string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	out, m, rep, valid := listLabelledLocked(e, r.URL.Query(), e.st.net.firewalls, nil, e.firewallSchemaLocked)
	if !valid {
		return rep
	}
	return ok(struct {
		Firewalls []schema.Firewall `json:"firewalls"`
		Meta      meta              `json:"meta"`
	}{out, m})
}

// getFirewall serves GET /firewalls/{id}.
func (e *Emulator) getFirewall(_ *http.Request, raw string) reply {
	return getByID(e, raw, "firewall", func(ns *netState) map[int64]*firewall { return ns.firewalls },
		func(f *firewall) any {
			return struct {
				Firewall schema.Firewall `json:"firewall"`
			}{e.firewallSchemaLocked(f)}
		})
}

// createFirewall serves POST /firewalls → 201 {firewall, actions: []}
// (apply_to is not supported: apply at server create).
//
// Guess: a taken name is 409 uniqueness_error.
func (e *Emulator) createFirewall(r *http.Request, _ string) reply {
	return createNamed(e, r, "firewall", e.addFirewallLocked, func(f *firewall) any {
		return schema.FirewallCreateResponse{Firewall: e.firewallSchemaLocked(f), Actions: []schema.Action{}}
	})
}

// --- placement groups ---

// groupServersLocked are the ids of group id's servers.
func (e *Emulator) groupServersLocked(id int64) []int64 {
	out := []int64{}
	for _, srv := range e.st.order {
		if srv.placementGroup == id {
			out = append(out, srv.id)
		}
	}
	return out
}

// groupSchemaLocked renders g with the ids of its servers.
func (e *Emulator) groupSchemaLocked(g *placementGroup) schema.PlacementGroup {
	return schema.PlacementGroup{ID: g.id, Name: g.name, Labels: maps.Clone(g.labels), Created: g.created,
		Servers: e.groupServersLocked(g.id), Type: "spread"}
}

// listPlacementGroups serves GET /placement_groups (filters: name, type,
// label_selector).
func (e *Emulator) listPlacementGroups(r *http.Request, _ string) reply {
	q := r.URL.Query()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	spread := func(*placementGroup) bool { return q.Get("type") == "" || q.Get("type") == "spread" }
	out, m, rep, valid := listLabelledLocked(e, q, e.st.net.placementGroups, spread, e.groupSchemaLocked)
	if !valid {
		return rep
	}
	return ok(struct {
		PlacementGroups []schema.PlacementGroup `json:"placement_groups"`
		Meta            meta                    `json:"meta"`
	}{out, m})
}

// getPlacementGroup serves GET /placement_groups/{id}.
func (e *Emulator) getPlacementGroup(_ *http.Request, raw string) reply {
	return getByID(e, raw, "placement group", func(ns *netState) map[int64]*placementGroup { return ns.placementGroups },
		func(g *placementGroup) any {
			return schema.PlacementGroupGetResponse{PlacementGroup: e.groupSchemaLocked(g)}
		})
}

// createPlacementGroup serves POST /placement_groups {name, type: spread,
// labels?} → 201 {placement_group, action: null}.
//
// Guess: a taken name is 409 uniqueness_error.
func (e *Emulator) createPlacementGroup(r *http.Request, _ string) reply {
	return createNamed(e, r, "placement group", e.addPlacementGroupLocked,
		func(g *placementGroup) any {
			return schema.PlacementGroupCreateResponse{PlacementGroup: e.groupSchemaLocked(g)}
		})
}

// addPlacementGroupLocked validates and stores a placement group; a taken
// name is reported only for an otherwise valid request. Callers hold e.mu.
func (e *Emulator) addPlacementGroupLocked(req schema.PlacementGroupCreateRequest, now time.Time) (*placementGroup, []fieldError) {
	ns := &e.st.net
	var fields []fieldError
	if req.Name == "" {
		fields = append(fields, field("name", "Missing data for required field."))
	}
	if req.Type != "spread" {
		fields = append(fields, field("type", "type must be spread"))
	}
	labels := map[string]string{}
	if req.Labels != nil {
		labels = maps.Clone(*req.Labels)
		fields = append(fields, validateLabels(labels)...)
	}
	if len(fields) > 0 {
		return nil, fields
	}
	if byIDOrName(ns.placementGroups, req.Name, func(g *placementGroup) string { return g.name }) != nil {
		return nil, []fieldError{field("name", "is already used")}
	}
	g := &placementGroup{id: ns.nextPlacementGroupID, name: req.Name, labels: labels, created: now.UTC().Truncate(time.Second)}
	ns.nextPlacementGroupID++
	ns.placementGroups[g.id] = g
	return g, nil
}

// deletePlacementGroup serves DELETE /placement_groups/{id} → 204.
//
// Guess: a group that still has servers answers 422 resource_in_use, as a
// firewall in use does.
func (e *Emulator) deletePlacementGroup(_ *http.Request, raw string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	id, _ := parseID(raw)
	if e.st.net.placementGroups[id] == nil {
		return notFound("placement group")
	}
	if len(e.groupServersLocked(id)) > 0 {
		return errorReply(http.StatusUnprocessableEntity, "resource_in_use", "placement group still has servers", nil)
	}
	delete(e.st.net.placementGroups, id)
	return reply{status: http.StatusNoContent}
}

// --- primary IPs ---

// primaryIPJSON is a Primary IP on the wire.
type primaryIPJSON struct {
	ID           int64             `json:"id"`
	Name         string            `json:"name"`
	IP           string            `json:"ip"`
	Type         string            `json:"type"`
	AssigneeID   int64             `json:"assignee_id"`
	AssigneeType string            `json:"assignee_type"`
	AutoDelete   bool              `json:"auto_delete"`
	Blocked      bool              `json:"blocked"`
	Created      time.Time         `json:"created"`
	Labels       map[string]string `json:"labels"`
	Location     schema.Location   `json:"location"`
}

// listPrimaryIPs serves GET /primary_ips: the Primary IPs POST /servers
// made for servers with public_net enabled (one per enabled family),
// assigned to their server, auto_delete true.
//
// Guess: auto-created Primary IPs are named "primary_ip-<id>" and have
// auto_delete true (the reference calls the latter Unconfirmed); their ids
// follow from their server's; the list's filters (name, ip, assignee,
// label_selector) are ignored.
func (e *Emulator) listPrimaryIPs(r *http.Request, _ string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	var ips []primaryIPJSON
	for _, srv := range e.st.order {
		for _, fam := range []struct{ typ, ip string }{{"ipv4", srv.ipv4}, {"ipv6", srv.ipv6}} {
			if fam.ip == "" {
				continue
			}
			id := srv.primaryIPID(fam.typ)
			ips = append(ips, primaryIPJSON{ID: id, Name: fmt.Sprintf("primary_ip-%d", id), IP: fam.ip, Type: fam.typ,
				AssigneeID: srv.id, AssigneeType: "server", AutoDelete: true, Created: srv.created,
				Labels: map[string]string{}, Location: srv.loc.Location})
		}
	}
	out, m := pageOf(ips, r.URL.Query(), func(p primaryIPJSON) primaryIPJSON { return p })
	return ok(struct {
		PrimaryIPs []primaryIPJSON `json:"primary_ips"`
		Meta       meta            `json:"meta"`
	}{out, m})
}

// primaryIPID is the id of srv's Primary IP of family typ.
func (srv *server) primaryIPID(typ string) int64 {
	if typ == "ipv4" {
		return firstPrimaryIPID + (srv.id-firstServerID)*2
	}
	return firstPrimaryIPID + (srv.id-firstServerID)*2 + 1
}
