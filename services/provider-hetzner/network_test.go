package hetzner

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// busEnv is an emulator and the provider served on the bus against it.
type busEnv struct {
	*env
	r provider.Remote
}

func newBusEnv(t *testing.T) *busEnv {
	t.Helper()
	e := newEnv(t)
	r := providertest.Serve(t, Definition(WithEndpoint(e.srv.URL()), WithPollInterval(testActionDuration)), e.clock, testSecrets)
	return &busEnv{env: e, r: r}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// server is the emulator's server with id.
func (e *busEnv) server(t *testing.T, id string) emulator.ServerSnapshot {
	t.Helper()
	for _, s := range e.emu.Servers() {
		if s.ID == mustID(t, id) {
			return s
		}
	}
	t.Fatalf("emulator has no server %s: %+v", id, e.emu.Servers())
	return emulator.ServerSnapshot{}
}

func mustID(t *testing.T, id string) int64 {
	t.Helper()
	n, err := parseServerID(id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func off() *bool { b := false; return &b }

// A pool's private network (by name), firewall (by name) and "no public
// IPv4" reach the one POST /servers: the emulator's server has no public
// IPv4, an address in the network's subnet and the firewall applied, and
// the machine reports the addresses it has.
func TestCreateWithNetworkFirewallAndNoPublicIPv4(t *testing.T) {
	e := newBusEnv(t)
	netID := e.emu.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central")
	fwID := e.emu.AddFirewall("web")
	spec := api.MachineSpec{Name: "web-1", OfferID: "cx23", Image: "ubuntu-24.04", PoolID: "pool_a",
		Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend"}}, Firewalls: []string{"web"}, PublicIPv4: off()}}
	e.emu.ResetCalls()
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_net", spec)
	if err != nil {
		t.Fatal(err)
	}
	srv := e.server(t, m.ID)
	if srv.PublicIPv4 != "" || srv.PublicIPv6 == "" {
		t.Fatalf("server public IPs = %q, %q; want no IPv4, an IPv6", srv.PublicIPv4, srv.PublicIPv6)
	}
	if ip := srv.PrivateIP(netID); ip != "10.0.1.1" {
		t.Fatalf("private IP in network %d = %q, want 10.0.1.1 (server %+v)", netID, ip, srv)
	}
	if len(srv.Firewalls) != 1 || srv.Firewalls[0] != fwID {
		t.Fatalf("server firewalls = %v, want [%d]", srv.Firewalls, fwID)
	}
	if len(m.Addresses) != 2 || m.Addresses[1] != "10.0.1.1" || strings.Count(m.Addresses[0], ".") != 0 {
		t.Fatalf("machine addresses = %v, want [IPv6, 10.0.1.1]", m.Addresses)
	}
	got := e.emu.CallCounts()
	if got["POST /servers"] != 1 || got["GET /networks"] != 1 || got["GET /firewalls"] != 1 {
		t.Fatalf("calls = %v, want one POST /servers and one lookup per name", got)
	}
}

// By id, networks and firewalls cost no lookup: the create is the key
// lookup and the POST.
func TestCreateWithNetworkIDsCostsNoLookup(t *testing.T) {
	e := newBusEnv(t)
	netID := e.emu.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central")
	fwID := e.emu.AddFirewall("web")
	spec := api.MachineSpec{Name: "web-1", OfferID: "cx23", Image: "ubuntu-24.04",
		Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: itoa(netID)}}, Firewalls: []string{itoa(fwID)}}}
	e.emu.ResetCalls()
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_ids", spec)
	if err != nil {
		t.Fatal(err)
	}
	if srv := e.server(t, m.ID); srv.PublicIPv4 == "" || srv.PrivateIP(netID) == "" || len(srv.Firewalls) != 1 {
		t.Fatalf("server = %+v", srv)
	}
	if n := e.calls(); n != 2 {
		t.Fatalf("calls = %v, want 2 (key lookup, POST)", e.emu.CallCounts())
	}
}

// A network's ipRange naming its second subnet is honoured: the server is
// created without that network and joins it by attach_to_network with
// ip_range once its create actions ended, so its address is of the
// second subnet; the create answers only then, with the address. A
// second create of the key finds the server attached and attaches
// nothing.
func TestCreateAttachesThroughTheSubnetOfIPRange(t *testing.T) {
	e := newBusEnv(t)
	netID := e.emu.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central", "10.0.2.0/24@eu-central")
	spec := api.MachineSpec{Name: "db-1", OfferID: "cx23", Image: "ubuntu-24.04",
		Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend", IPRange: "10.0.2.0/24"}}}}
	e.emu.ResetCalls()
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_range", spec)
	if err != nil {
		t.Fatal(err)
	}
	if ip := e.server(t, m.ID).PrivateIP(netID); ip != "10.0.2.1" {
		t.Fatalf("private IP = %q, want 10.0.2.1 of ipRange 10.0.2.0/24 (calls %v)", ip, e.emu.CallCounts())
	}
	if !slices.Contains(m.Addresses, "10.0.2.1") || m.State != api.StateRunning {
		t.Fatalf("machine = %+v, want running with 10.0.2.1", m)
	}
	if got := e.emu.CallCounts(); got[emulator.RouteAttachToNetwork] != 1 || got["POST /servers"] != 1 {
		t.Fatalf("calls = %v, want one POST /servers and one attach_to_network", got)
	}
	e.emu.ResetCalls()
	again, err := e.r.Create(ctxT(t), testAccount(), "inst_range", spec)
	if err != nil || again.ID != m.ID {
		t.Fatalf("second create = %+v, %v; want server %s", again, err, m.ID)
	}
	if got := e.emu.CallCounts(); got[emulator.RouteAttachToNetwork] != 0 || got["POST /servers"] != 0 {
		t.Fatalf("second create calls = %v, want no POST", got)
	}
}

// An attach whose action fails fails the create; the retry of the key
// finds the server, not in the network, and attaches it.
func TestFailedAttachIsRetriedByTheNextCreate(t *testing.T) {
	e := newBusEnv(t)
	netID := e.emu.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central", "10.0.2.0/24@eu-central")
	spec := api.MachineSpec{Name: "db-1", OfferID: "cx23", Image: "ubuntu-24.04",
		Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: strconv.FormatInt(netID, 10), IPRange: "10.0.2.0/24"}}}}
	e.emu.FailNextAction("attach_to_network", "server_error", "attach failed")
	if _, err := e.r.Create(ctxT(t), testAccount(), "inst_retry", spec); api.AsComputeError(err).Code != api.CodeProviderError {
		t.Fatalf("create with a failing attach = %v, want PROVIDER_ERROR", err)
	}
	servers := e.emu.Servers()
	if len(servers) != 1 || servers[0].PrivateIP(netID) != "" {
		t.Fatalf("servers = %+v, want one, not in the network", servers)
	}
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_retry", spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.emu.Servers(); len(got) != 1 || got[0].PrivateIP(netID) != "10.0.2.1" || !slices.Contains(m.Addresses, "10.0.2.1") {
		t.Fatalf("after the retry: servers %+v, machine %+v", got, m)
	}
}

// Eleven creates of one spread pool, all at once, land in two placement
// groups of the pool: ten and one, each labelled with the pool.
func TestSpreadChunksGroupsOfTen(t *testing.T) {
	e := newBusEnv(t)
	spec := func(i int) api.MachineSpec {
		return api.MachineSpec{Name: "w-" + itoa(int64(i)), OfferID: "cx23", Image: "ubuntu-24.04", PoolID: "pool_spread",
			Placement: &api.PoolPlacement{Spread: true}}
	}
	var wg sync.WaitGroup
	errs := make([]error, 11)
	for i := range 11 {
		wg.Go(func() { _, errs[i] = e.r.Create(ctxT(t), testAccount(), "inst_s"+itoa(int64(i)), spec(i)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	groups := e.emu.PlacementGroups()
	if len(groups) != 2 || len(groups[0].Servers) != 10 || len(groups[1].Servers) != 1 {
		t.Fatalf("placement groups = %+v, want 10 and 1 servers", groups)
	}
	for _, g := range groups {
		if g.Labels[testPrefix+"/pool"] != "pool_spread" || g.Labels[testPrefix+"/managed"] != "true" ||
			g.Labels[testPrefix+"/location"] != DefaultLocation {
			t.Fatalf("group %s labels = %v", g.Name, g.Labels)
		}
	}
	for _, s := range e.emu.Servers() {
		if s.PlacementGroup == 0 {
			t.Fatalf("server %s is in no group", s.Name)
		}
	}
}

// A group the create made and then crashed before its POST /servers is
// labelled, so it is not leaked: the pool's next create fills it, and an
// empty group is deleted by a spread create once older than the grace.
func TestSpreadGroupOfACrashedCreateIsReusedThenSwept(t *testing.T) {
	e := newBusEnv(t)
	spec := api.MachineSpec{Name: "w-1", OfferID: "cx23", Image: "ubuntu-24.04", PoolID: "pool_crash", Placement: &api.PoolPlacement{Spread: true}}
	e.emu.FailNext("POST /servers", 1, 503, "unavailable", "injected: the create dies after making its group")
	if _, err := e.r.Create(ctxT(t), testAccount(), "inst_c1", spec); err == nil {
		t.Fatal("create succeeded, want the injected failure")
	}
	if g := e.emu.PlacementGroups(); len(g) != 1 || len(g[0].Servers) != 0 {
		t.Fatalf("groups after the failed create = %+v, want one empty", g)
	}
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_c1", spec)
	if err != nil {
		t.Fatal(err)
	}
	if g := e.emu.PlacementGroups(); len(g) != 1 || len(g[0].Servers) != 1 {
		t.Fatalf("groups after the retry = %+v, want the same group with the server", g)
	}
	// The pool's server goes; past the grace another pool's create sweeps
	// the empty group.
	e.clock.Advance(testActionDuration)
	if err := e.r.Delete(ctxT(t), testAccount(), m.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(EmptyGroupGrace + time.Minute)
	other := spec
	other.Name, other.PoolID = "o-1", "pool_other"
	if _, err := e.r.Create(ctxT(t), testAccount(), "inst_o1", other); err != nil {
		t.Fatal(err)
	}
	groups := e.emu.PlacementGroups()
	if len(groups) != 1 || groups[0].Labels[testPrefix+"/pool"] != "pool_other" {
		t.Fatalf("groups = %+v, want only pool_other's (pool_crash's empty one swept)", groups)
	}
}

// Location fallback: fsn1 has no capacity (412 resource_unavailable), so
// the same request goes to nbg1; one server exists, in nbg1, and the
// machine says why it is there.
func TestLocationFallbackAfter412(t *testing.T) {
	e := newBusEnv(t)
	e.emu.SetLocationFull("fsn1", true)
	spec := api.MachineSpec{Name: "w-1", OfferID: "cx23", Image: "ubuntu-24.04", Placement: &api.PoolPlacement{Locations: []string{"fsn1", "nbg1"}}}
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_loc", spec)
	if err != nil {
		t.Fatal(err)
	}
	servers := e.emu.Servers()
	if len(servers) != 1 || servers[0].Location != "nbg1" || m.Region != "nbg1" {
		t.Fatalf("servers = %+v, machine region %q; want one server in nbg1", servers, m.Region)
	}
	if !strings.Contains(m.PlacementNote, "nbg1") || !strings.Contains(m.PlacementNote, "fsn1") ||
		!strings.Contains(m.PlacementNote, "resource_unavailable") {
		t.Fatalf("placement note = %q", m.PlacementNote)
	}
	// A retry of the key finds the server and still explains it.
	again, err := e.r.Create(ctxT(t), testAccount(), "inst_loc", spec)
	if err != nil || again.ID != m.ID || !strings.Contains(again.PlacementNote, "nbg1") {
		t.Fatalf("retry = %+v, %v", again, err)
	}
	// Every location full: the last refusal, retryable, and no server.
	e.emu.SetLocationFull("nbg1", true)
	_, err = e.r.Create(ctxT(t), testAccount(), "inst_loc2", api.MachineSpec{Name: "w-2", OfferID: "cx23", Image: "ubuntu-24.04",
		Placement: spec.Placement})
	ce := api.AsComputeError(err)
	if ce.Code != api.CodeProviderError || ce.Details.Status == nil || *ce.Details.Status != 412 || ce.Details.Permanent {
		t.Fatalf("create with every location full = %v (%+v), want retryable PROVIDER_ERROR 412", err, ce.Details)
	}
	if n := len(e.emu.Servers()); n != 1 {
		t.Fatalf("servers = %d, want 1", n)
	}
}

// describe claims the pool capabilities of Hetzner Cloud.
func TestDescribeClaimsPoolCapabilities(t *testing.T) {
	e := newBusEnv(t)
	d, err := e.r.Describe(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{provider.CapabilityNetworkPrivate, provider.CapabilityNetworkFirewalls, provider.CapabilityNetworkPublicIP,
		provider.CapabilityPlacementSpread, provider.CapabilityPlacementLocations} {
		if !slices.Contains(d.Capabilities, c) {
			t.Errorf("describe capabilities %v lack %s", d.Capabilities, c)
		}
	}
}

// checkpool refuses what the project cannot have, naming the field.
func TestCheckPoolRefusals(t *testing.T) {
	e := newBusEnv(t)
	e.emu.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central", "10.0.2.0/24@eu-central")
	e.emu.AddNetwork("us", "10.1.0.0/16", "10.1.1.0/24@us-east")
	e.emu.AddNetwork("side", "10.2.0.0/16", "10.2.1.0/24@eu-central")
	webID := e.emu.AddFirewall("web")
	nets := func(a ...api.NetworkAttachment) *api.PoolNetwork { return &api.PoolNetwork{PrivateNetworks: a} }
	cases := []struct {
		name      string
		network   *api.PoolNetwork
		placement *api.PoolPlacement
		flavors   []api.Flavor
		path      string // "" for accepted
	}{
		{"network by name", nets(api.NetworkAttachment{Network: "backend"}), nil, nil, ""},
		{"first subnet as ipRange", nets(api.NetworkAttachment{Network: "backend", IPRange: "10.0.1.0/24"}), nil, nil, ""},
		{"everything", &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend"}}, Firewalls: []string{"web"}, PublicIPv4: off()},
			&api.PoolPlacement{Spread: true, Locations: []string{"fsn1", "nbg1"}}, nil, ""},
		{"unknown network", nets(api.NetworkAttachment{Network: "nope"}), nil, nil, "network.privateNetworks[0].network"},
		{"unknown network id", nets(api.NetworkAttachment{Network: "999"}), nil, nil, "network.privateNetworks[0].network"},
		{"network twice", nets(api.NetworkAttachment{Network: "backend"}, api.NetworkAttachment{Network: "backend"}), nil, nil,
			"network.privateNetworks[1].network"},
		{"network of another zone", nets(api.NetworkAttachment{Network: "us"}), nil, nil, "network.privateNetworks[0].network"},
		{"location of another zone", nets(api.NetworkAttachment{Network: "backend"}), &api.PoolPlacement{Locations: []string{"fsn1", "ash"}}, nil,
			"network.privateNetworks[0].network"},
		{"ipRange not a CIDR", nets(api.NetworkAttachment{Network: "backend", IPRange: "ten"}), nil, nil, "network.privateNetworks[0].ipRange"},
		{"ipRange with host bits", nets(api.NetworkAttachment{Network: "backend", IPRange: "10.0.1.5/24"}), nil, nil, "network.privateNetworks[0].ipRange"},
		{"second subnet as ipRange", nets(api.NetworkAttachment{Network: "backend", IPRange: "10.0.2.0/24"}), nil, nil, ""},
		{"ipRange no subnet", nets(api.NetworkAttachment{Network: "backend", IPRange: "10.0.3.0/24"}), nil, nil,
			"network.privateNetworks[0].ipRange"},
		{"no public IP, second subnet joins at create", &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{
			{Network: "backend", IPRange: "10.0.2.0/24"}}, PublicIPv4: off(), PublicIPv6: off()}, nil, nil, "network.privateNetworks[0].ipRange"},
		{"no public IP, second subnet after a network without range", &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{
			{Network: "side"}, {Network: "backend", IPRange: "10.0.2.0/24"}}, PublicIPv4: off(), PublicIPv6: off()}, nil, nil, ""},
		{"unknown firewall", &api.PoolNetwork{Firewalls: []string{"web", "db"}}, nil, nil, "network.firewalls[1]"},
		{"firewall twice", &api.PoolNetwork{Firewalls: []string{"web", "web"}}, nil, nil, "network.firewalls[1]"},
		{"firewall by name and id", &api.PoolNetwork{Firewalls: []string{"web", itoa(webID)}}, nil, nil, "network.firewalls[1]"},
		{"more firewalls than a server takes", &api.PoolNetwork{Firewalls: slices.Repeat([]string{"web"}, 500)}, nil, nil, "network.firewalls"},
		{"unknown location", nil, &api.PoolPlacement{Locations: []string{"fsn1", "mars"}}, nil, "placement.locations[1]"},
		{"location twice", nil, &api.PoolPlacement{Locations: []string{"fsn1", "fsn1"}}, nil, "placement.locations[1]"},
		{"no public IP, no network", &api.PoolNetwork{PublicIPv4: off(), PublicIPv6: off()}, nil, nil, "network.publicIPv4"},
		{"firewall without public IP", &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend"}}, Firewalls: []string{"web"},
			PublicIPv4: off(), PublicIPv6: off()}, nil, nil, "network.firewalls"},
		{"Proxmox bridge", &api.PoolNetwork{Bridge: "vmbr1"}, nil, nil, "network.bridge"},
		{"Proxmox nodes", nil, &api.PoolPlacement{Nodes: []string{"pve1"}}, nil, "placement.nodes"},
		{"Proxmox storage", nil, nil, []api.Flavor{{Name: "a", OfferID: "cx23"}, {Name: "b", OfferID: "cx23", Storage: "local"}}, "flavors[1].storage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := e.r.CheckPool(ctxT(t), api.ProviderPoolCheckRequest{Account: testAccount(), Network: tc.network, Placement: tc.placement, Flavors: tc.flavors})
			ce := api.AsComputeError(err)
			switch {
			case tc.path == "" && err != nil:
				t.Fatalf("refused: %v (path %q)", err, ce.Path())
			case tc.path != "" && (ce.Code != api.CodeInvalidInput || ce.Path() != tc.path):
				t.Fatalf("got %v (code %s, path %q), want INVALID_INPUT at %q", err, ce.Code, ce.Path(), tc.path)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Offers come cheapest first, each with its architecture: the cax types
// are Arm (arm64), the others x86 (amd64).
func TestOffersSortedByPriceWithArchitecture(t *testing.T) {
	e := newBusEnv(t)
	offers, err := e.r.Offers(ctxT(t), testAccount(), api.OfferQuery{})
	if err != nil || len(offers) < 2 {
		t.Fatalf("offers = %v, %v", offers, err)
	}
	sorted := slices.Clone(offers)
	api.SortOffersByPrice(sorted)
	if !slices.EqualFunc(offers, sorted, func(a, b api.Offer) bool { return a.ID == b.ID }) {
		t.Errorf("offers are not sorted by price: %v", offers)
	}
	arm := 0
	for _, o := range offers {
		want := api.ArchAMD64
		if strings.HasPrefix(o.ID, "cax") {
			want, arm = api.ArchARM64, arm+1
		}
		if o.Architecture != want {
			t.Errorf("offer %s has architecture %q, want %s", o.ID, o.Architecture, want)
		}
	}
	if arm == 0 {
		t.Errorf("no cax offer in %v", offers)
	}
}

// A POST /servers that made its server and lost its reply (the caller
// saw a crash) leaves one server: the retry finds it by key, in its
// group, and makes no second server or group.
func TestLostReplyOfSpreadCreateMakesOneServer(t *testing.T) {
	e := newBusEnv(t)
	spec := api.MachineSpec{Name: "w-1", OfferID: "cx23", Image: "ubuntu-24.04", PoolID: "pool_lost",
		Placement: &api.PoolPlacement{Spread: true, Locations: []string{"fsn1", "nbg1"}}}
	e.emu.DropResponseNext("POST /servers", 1)
	if _, err := e.r.Create(ctxT(t), testAccount(), "inst_lost", spec); err == nil {
		t.Fatal("create answered, want the lost reply's error")
	}
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_lost", spec)
	if err != nil {
		t.Fatal(err)
	}
	servers, groups := e.emu.Servers(), e.emu.PlacementGroups()
	if len(servers) != 1 || servers[0].Location != "fsn1" || len(groups) != 1 || len(groups[0].Servers) != 1 ||
		strconv.FormatInt(servers[0].ID, 10) != m.ID || m.PlacementNote != "" {
		t.Fatalf("servers %+v, groups %+v, machine %+v; want one server in fsn1, in the one group", servers, groups, m)
	}
}

// A spread pool keeps groups per location: after a fallback its server
// is in a group of the location it landed in, not the first one's.
func TestSpreadGroupsPerLocation(t *testing.T) {
	e := newBusEnv(t)
	spec := func(name string) api.MachineSpec {
		return api.MachineSpec{Name: name, OfferID: "cx23", Image: "ubuntu-24.04", PoolID: "pool_loc",
			Placement: &api.PoolPlacement{Spread: true, Locations: []string{"fsn1", "nbg1"}}}
	}
	if _, err := e.r.Create(ctxT(t), testAccount(), "inst_l1", spec("a")); err != nil {
		t.Fatal(err)
	}
	e.emu.SetLocationFull("fsn1", true)
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_l2", spec("b"))
	if err != nil || m.Region != "nbg1" {
		t.Fatalf("create after fsn1 filled = %+v, %v", m, err)
	}
	groups := e.emu.PlacementGroups()
	if len(groups) != 2 || groups[0].Labels[testPrefix+"/location"] != "fsn1" || groups[1].Labels[testPrefix+"/location"] != "nbg1" ||
		len(groups[0].Servers) != 1 || len(groups[1].Servers) != 1 {
		t.Fatalf("groups = %+v, want one per location with one server each", groups)
	}
}

// Offers for a pool with locations are where its creates land: with cx23
// sold out in fsn1, the account's offer (fsn1) is not available, the
// pool's (fsn1, then nbg1) is, in nbg1, and a create of the pool lands
// there.
func TestOffersForAPoolAreWhereItsCreatesLand(t *testing.T) {
	e := newBusEnv(t)
	e.emu.SetAvailability("cx23", "fsn1", false)
	find := func(q api.OfferQuery) api.Offer {
		t.Helper()
		offers, err := e.r.Offers(ctxT(t), testAccount(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offers {
			if o.ID == "cx23" {
				return o
			}
		}
		t.Fatalf("no cx23 in %+v", offers)
		return api.Offer{}
	}
	if o := find(api.OfferQuery{}); o.Available || o.Region != "fsn1" {
		t.Fatalf("account offer = %+v, want cx23 in fsn1 not available", o)
	}
	placement := &api.PoolPlacement{Locations: []string{"fsn1", "nbg1"}}
	if o := find(api.OfferQuery{Placement: placement}); !o.Available || o.Region != "nbg1" {
		t.Fatalf("pool offer = %+v, want cx23 available in nbg1", o)
	}
	m, err := e.r.Create(ctxT(t), testAccount(), "inst_offer", api.MachineSpec{Name: "w-1", OfferID: "cx23", Image: "ubuntu-24.04",
		Placement: placement})
	if err != nil || m.Region != "nbg1" {
		t.Fatalf("create = %+v, %v; want it in nbg1, as the offer said", m, err)
	}
}
