package emulator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/sshemu"
)

// Server statuses.
const (
	statusInitializing = "initializing"
	statusStarting     = "starting"
	statusRunning      = "running"
	statusStopping     = "stopping"
	statusOff          = "off"
	statusDeleting     = "deleting"
	statusRebuilding   = "rebuilding"
)

// server is one server of the project.
type server struct {
	id               int64
	name             string
	status           string
	created          time.Time
	typ              *serverType
	loc              *location
	img              *image
	labels           map[string]string
	ipv4             string
	ipv6             string
	startAfterCreate bool
	// privateNets, firewalls and placementGroup are what POST /servers
	// attached (see netcreate.go); ipv4 and ipv6 are "" when public_net
	// disabled them.
	privateNets    []privateNet
	firewalls      []int64
	placementGroup int64
	// sshPort is the loopback port of its SSH endpoint (0: none).
	sshPort int
	// createFailure is set when create_server failed.
	createFailure *actionFault
	// running counts actions in flight; the server is locked while > 0.
	running int
	actions []*action
	// disk is the primary disk size in GB (0: the type's; see diskGB):
	// change_type with upgrade_disk false keeps it.
	disk int
}

// diskGB is the server's primary disk size in GB.
func (srv *server) diskGB() int {
	if srv.disk > 0 {
		return srv.disk
	}
	return srv.typ.disk
}

// ServerSnapshot is a server as the emulator holds it, for assertions and
// the GET /_emulator/servers control endpoint.
type ServerSnapshot struct {
	ID         int64             `json:"id"`
	Name       string            `json:"name"`
	Status     string            `json:"status"`
	ServerType string            `json:"server_type"`
	Location   string            `json:"location"`
	Image      string            `json:"image"`
	Labels     map[string]string `json:"labels"`
	Created    time.Time         `json:"created"`
	// PublicIPv4 and PublicIPv6 are "" when the server has none.
	PublicIPv4 string `json:"public_ipv4"`
	PublicIPv6 string `json:"public_ipv6"`
	// PrivateIPs maps network id to the server's address in it.
	PrivateIPs     map[int64]string `json:"private_ips"`
	Firewalls      []int64          `json:"firewalls"`
	PlacementGroup int64            `json:"placement_group"`
}

// addServerLocked registers a new server with a fresh id, unique name
// already checked by the caller, and addresses from the documentation
// ranges. Callers hold e.mu.
func (e *Emulator) addServerLocked(name, status string, typ *serverType, loc *location, img *image,
	labels map[string]string, now time.Time) *server {
	st := e.st
	seq := st.serverSeq
	st.serverSeq++
	srv := &server{
		id: st.nextServerID, name: name, status: status, created: now.UTC().Truncate(time.Second),
		typ: typ, loc: loc, img: img, labels: labels,
		ipv4: ipv4For(seq), ipv6: ipv6For(seq),
	}
	st.nextServerID++
	st.servers[srv.id] = srv
	st.names[name] = srv
	st.order = append(st.order, srv) // ids only grow: order stays sorted
	return srv
}

// removeServerLocked forgets srv; its name becomes free. Callers hold e.mu.
func (e *Emulator) removeServerLocked(srv *server) {
	st := e.st
	if e.ssh != nil {
		e.ssh.Stop(strconv.FormatInt(srv.id, 10))
	}
	delete(st.servers, srv.id)
	if st.names[srv.name] == srv {
		delete(st.names, srv.name)
	}
	byID := func(s *server, id int64) int { return cmp.Compare(s.id, id) }
	if i, found := slices.BinarySearchFunc(st.order, srv.id, byID); found {
		st.order = slices.Delete(st.order, i, i+1)
	}
}

// ipv4For returns the seq-th IPv4 address from the documentation ranges
// (RFC 5737). There are only 762 of them, so they repeat in large
// inventories.
func ipv4For(seq int64) string {
	nets := [...]string{"203.0.113", "198.51.100", "192.0.2"}
	const hosts = 254
	return fmt.Sprintf("%s.%d", nets[(seq/hosts)%int64(len(nets))], seq%hosts+1)
}

// ipv6For returns the seq-th /64 from the documentation range (RFC 3849),
// written as the real API writes a server's IPv6 network.
func ipv6For(seq int64) string {
	return fmt.Sprintf("2001:db8:%x:%x::/64", (seq>>16)&0xffff, seq&0xffff)
}

// serverJSON is the server object on the wire: everything schema.Server
// has, plus the datacenter object the API still embeds.
type serverJSON struct {
	schema.Server
	// PublicNet shadows Server.PublicNet: a disabled family is null.
	PublicNet  publicNetJSON  `json:"public_net"`
	Datacenter datacenterJSON `json:"datacenter"`
}

// publicNetJSON is a server's public_net: ipv4 and ipv6 null when the
// server has none.
type publicNetJSON struct {
	IPv4        *schema.ServerPublicNetIPv4 `json:"ipv4"`
	IPv6        *schema.ServerPublicNetIPv6 `json:"ipv6"`
	FloatingIPs []int64                     `json:"floating_ips"`
	Firewalls   []schema.ServerFirewall     `json:"firewalls"`
}

// datacenterJSON is a server's datacenter.
type datacenterJSON struct {
	ID          int64           `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Location    schema.Location `json:"location"`
}

// toSchema renders srv as the API does.
func (srv *server) toSchema() serverJSON {
	img := srv.img.toSchema()
	labels := srv.labels
	if labels == nil {
		labels = map[string]string{}
	}
	if srv.sshPort != 0 {
		labels = maps.Clone(labels)
		labels[api.EmulatorSSHPortKey] = strconv.Itoa(srv.sshPort)
	}
	traffic := uint64(0)
	ptr := "static." + srv.ipv4 + ".clients.your-server.de"
	pub := publicNetJSON{FloatingIPs: []int64{}, Firewalls: []schema.ServerFirewall{}}
	if srv.ipv4 != "" {
		pub.IPv4 = &schema.ServerPublicNetIPv4{ID: srv.primaryIPID("ipv4"), IP: srv.ipv4, DNSPtr: ptr}
	}
	if srv.ipv6 != "" {
		pub.IPv6 = &schema.ServerPublicNetIPv6{ID: srv.primaryIPID("ipv6"), IP: srv.ipv6, DNSPtr: []schema.ServerPublicNetIPv6DNSPtr{}}
	}
	for _, f := range srv.firewalls {
		// Guess: the apply_firewall action is not modelled; the firewall
		// shows applied at once.
		pub.Firewalls = append(pub.Firewalls, schema.ServerFirewall{ID: f, Status: "applied"})
	}
	private := []schema.ServerPrivateNet{}
	for _, p := range srv.privateNets {
		private = append(private, schema.ServerPrivateNet{Network: p.network, IP: p.ip.String(), AliasIPs: []string{},
			MACAddress: fmt.Sprintf("86:00:00:%02x:%02x:%02x", byte(srv.id>>16), byte(srv.id>>8), byte(srv.id))})
	}
	var group *schema.PlacementGroup
	if srv.placementGroup != 0 {
		// Guess: the group embedded in a server shows its id and type;
		// its name, labels and servers are left empty here (clients read
		// GET /placement_groups for those).
		group = &schema.PlacementGroup{ID: srv.placementGroup, Type: "spread", Servers: []int64{}, Labels: map[string]string{}}
	}
	return serverJSON{
		PublicNet: pub,
		Server: schema.Server{
			ID: srv.id, Name: srv.name, Status: srv.status, Created: srv.created,
			PlacementGroup:  group,
			PrivateNet:      private,
			ServerType:      srv.typ.toSchema(),
			IncludedTraffic: srv.loc.includedTraffic,
			OutgoingTraffic: &traffic,
			IngoingTraffic:  &traffic,
			Locked:          srv.running > 0,
			Location:        srv.loc.Location,
			Image:           &img,
			Labels:          labels,
			Volumes:         []int64{},
			PrimaryDiskSize: srv.diskGB(),
			LoadBalancers:   []int64{},
		},
		Datacenter: datacenterJSON{
			ID: srv.loc.ID, Name: srv.loc.datacenter,
			Description: srv.loc.Description + " DC", Location: srv.loc.Location,
		},
	}
}

// snapshot copies srv for callers outside the lock.
func (srv *server) snapshot() ServerSnapshot {
	snap := ServerSnapshot{
		ID: srv.id, Name: srv.name, Status: srv.status, ServerType: srv.typ.name,
		Location: srv.loc.Name, Image: srv.img.name, Labels: maps.Clone(srv.labels), Created: srv.created,
		PublicIPv4: srv.ipv4, PublicIPv6: srv.ipv6, PrivateIPs: map[int64]string{},
		Firewalls: slices.Clone(srv.firewalls), PlacementGroup: srv.placementGroup,
	}
	for _, p := range srv.privateNets {
		snap.PrivateIPs[p.network] = p.ip.String()
	}
	return snap
}

// Servers returns every server, by ascending id, after completing the
// actions that are due.
func (e *Emulator) Servers() []ServerSnapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	out := make([]ServerSnapshot, 0, len(e.st.order))
	for _, srv := range e.st.order {
		out = append(out, srv.snapshot())
	}
	return out
}

// Seed defaults: what SeedServers creates.
const (
	seedServerType = "cx23"
	seedLocation   = "fsn1"
	seedImage      = "ubuntu-24.04"
)

// SeedServers adds n running cx23 servers in fsn1 with ubuntu-24.04 and a
// copy of labels each, without actions or API calls, and returns their ids.
// Names are namePrefix-<id> (a numeric suffix is added if that is taken).
func (e *Emulator) SeedServers(n int, namePrefix string, labels map[string]string) []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	e.settleLocked(now)
	typ, loc := e.typeByName(seedServerType), e.locationByName(seedLocation)
	img := e.imageFor(schema.IDOrName{Name: seedImage}, typ.architecture)
	ids := make([]int64, 0, max(n, 0))
	for range n {
		name := fmt.Sprintf("%s-%d", namePrefix, e.st.nextServerID)
		for i := 2; e.st.names[name] != nil; i++ {
			name = fmt.Sprintf("%s-%d-%d", namePrefix, e.st.nextServerID, i)
		}
		ids = append(ids, e.addServerLocked(name, statusRunning, typ, loc, img, maps.Clone(labels), now).id)
	}
	return ids
}

// SetServerStatus changes a server's status out of band (drift: e.g. "off"
// when someone powered it off in the console). Unknown ids are ignored.
func (e *Emulator) SetServerStatus(id int64, status string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	if srv := e.st.servers[id]; srv != nil {
		srv.status = status
	}
}

// DeleteServerOutOfBand removes a server at once, without an action (as if
// deleted in the console); its name becomes free. Unknown ids are ignored.
func (e *Emulator) DeleteServerOutOfBand(id int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	if srv := e.st.servers[id]; srv != nil {
		e.removeServerLocked(srv)
	}
}

// SetServerLimit sets the project's server quota (see Options.ServerLimit):
// a create while n servers exist answers 403 resource_limit_exceeded; 0
// lifts the quota.
func (e *Emulator) SetServerLimit(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.serverLimit = max(n, 0)
}

// startSSHLocked gives srv, a server made through the API, an SSH
// endpoint when the emulator has a fleet (seeded inventories get none:
// thousands of servers would hold a port each). Callers hold e.mu.
func (e *Emulator) startSSHLocked(srv *server) {
	if e.ssh == nil {
		return
	}
	m, err := e.ssh.Start(strconv.FormatInt(srv.id, 10))
	if err != nil {
		e.log.Warn().Err(err).Int64("server", srv.id).Msg("emulator: no ssh endpoint")
		return
	}
	srv.sshPort = m.Port()
}

// sshMachine is srv's SSH endpoint, or nil.
func (e *Emulator) sshMachine(srv *server) *sshemu.Machine {
	if e.ssh == nil {
		return nil
	}
	return e.ssh.Machine(strconv.FormatInt(srv.id, 10))
}
