package conformance

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"better-compute.io/compute/pkg/api"
)

// Network sees and prepares the network resources behind the provider
// (network profile): what its machines are attached to, where they are,
// and a location without capacity.
type Network interface {
	// Pool returns a pool network the account can have, made in the
	// backend if need be: one private network and one firewall (by id or
	// name), public IPv4 off, public IPv6 on.
	Pool(ctx context.Context) (*api.PoolNetwork, error)
	// Machine is what the backend holds for machine id.
	Machine(ctx context.Context, id string) (NetworkMachine, error)
	// Locations are two locations machines of the subject's offer can be
	// made in, in the order a pool lists them.
	Locations(ctx context.Context) ([]string, error)
	// SetFull makes creates in location fail for lack of capacity (full),
	// or succeed again.
	SetFull(ctx context.Context, location string, full bool) error
}

// NetworkMachine is a machine's network part as the backend holds it.
type NetworkMachine struct {
	// PublicIPv4 is "" when the machine has none.
	PublicIPv4 string
	// PrivateIPs are its addresses in private networks.
	PrivateIPs []string
	// Firewalls are the ids of the firewalls applied to it.
	Firewalls []string
	// PlacementGroup is the id of its placement group ("" for none).
	PlacementGroup string
	// Location is where it runs.
	Location string
}

// spreadMachines is how many machines net.spread-chunks makes: more than
// one Hetzner spread group holds.
const spreadMachines = 11

// maxSpreadGroup is the most machines one spread group may hold.
const maxSpreadGroup = 10

// networkPool is the subject's pool network (Fatal when the hook fails).
func (c *check) networkPool() *api.PoolNetwork {
	ctx, cancel := c.callCtx()
	defer cancel()
	n, err := c.r.s.Network.Pool(ctx)
	if err != nil {
		c.Fatalf("the Network hook made no pool network: %v", err)
	}
	return n
}

// backendMachine is the backend's view of machine id.
func (c *check) backendMachine(id string) NetworkMachine {
	ctx, cancel := c.callCtx()
	defer cancel()
	m, err := c.r.s.Network.Machine(ctx, id)
	if err != nil {
		c.Fatalf("the Network hook cannot see machine %s: %v", id, err)
	}
	return m
}

// createWith creates machine name with the spec changed by set, deleted
// when the behaviour ends.
func (c *check) createWith(name string, set func(*api.MachineSpec)) (*api.ExternalMachine, error) {
	spec := c.spec(name)
	set(&spec)
	ctx, cancel := c.callCtx()
	defer cancel()
	m, err := c.remote().Create(ctx, c.acct(), name, spec)
	if err != nil {
		return nil, err
	}
	c.cleanupMachine(m.ID)
	return m, nil
}

// networkMachine creates a machine with the subject's pool network.
func (c *check) networkMachine() (*api.ExternalMachine, *api.PoolNetwork) {
	n := c.networkPool()
	name := c.name("n")
	m, err := c.createWith(name, func(s *api.MachineSpec) { s.Network = n })
	if err != nil {
		c.Fatalf("create %s with network %+v: %v", name, n, err)
	}
	return m, n
}

// netNoPublicIPv4: a machine whose pool turns public IPv4 off has none in
// the backend, and reports no public IPv4 address.
func netNoPublicIPv4(c *check) {
	m, _ := c.networkMachine()
	b := c.backendMachine(m.ID)
	if b.PublicIPv4 != "" {
		c.Errorf("machine %s has public IPv4 %s in the backend; its pool turned public IPv4 off", m.ID, b.PublicIPv4)
	}
	for _, a := range m.Addresses {
		if a == b.PublicIPv4 && a != "" {
			c.Errorf("machine %s reports public IPv4 %s", m.ID, a)
		}
	}
}

// netPrivateNetwork: the machine has an address in the pool's private
// network, and reports it.
func netPrivateNetwork(c *check) {
	m, _ := c.networkMachine()
	b := c.backendMachine(m.ID)
	if len(b.PrivateIPs) == 0 {
		c.Fatalf("machine %s has no private network address in the backend", m.ID)
	}
	for _, ip := range b.PrivateIPs {
		if !slices.Contains(m.Addresses, ip) {
			c.Errorf("machine %s reports addresses %v, without its private address %s", m.ID, m.Addresses, ip)
		}
	}
}

// netFirewallApplied: the pool's firewall is applied to the machine.
func netFirewallApplied(c *check) {
	m, n := c.networkMachine()
	if len(n.Firewalls) == 0 {
		c.Fatalf("the Network hook's pool network has no firewall")
	}
	if b := c.backendMachine(m.ID); len(b.Firewalls) != len(n.Firewalls) {
		c.Errorf("machine %s has firewalls %v in the backend, want the pool's %v", m.ID, b.Firewalls, n.Firewalls)
	}
}

// netSpreadChunks: spreadMachines creates of one spread pool, at once,
// put every machine in a placement group of at most maxSpreadGroup, in
// as few groups as that allows.
func netSpreadChunks(c *check) {
	pool := api.NewID(api.PrefixPool)
	ids := make([]string, spreadMachines)
	errs := make([]error, spreadMachines)
	var wg sync.WaitGroup
	for i := range spreadMachines {
		name := c.name("s")
		wg.Go(func() {
			m, err := c.createWith(name, func(s *api.MachineSpec) {
				s.PoolID, s.Placement = pool, &api.PoolPlacement{Spread: true}
			})
			if err == nil {
				ids[i] = m.ID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	groups := map[string]int{}
	for i, id := range ids {
		if errs[i] != nil {
			c.Fatalf("spread create %d: %v", i, errs[i])
		}
		g := c.backendMachine(id).PlacementGroup
		if g == "" {
			c.Errorf("machine %s of a spread pool is in no placement group", id)
		}
		groups[g]++
	}
	want := (spreadMachines + maxSpreadGroup - 1) / maxSpreadGroup
	var sizes []string
	for g, n := range groups {
		sizes = append(sizes, g+":"+strconv.Itoa(n))
		if n > maxSpreadGroup {
			c.Errorf("placement group %s holds %d machines, more than %d", g, n, maxSpreadGroup)
		}
	}
	if len(groups) != want {
		c.Errorf("%d machines are in %d placement groups (%s), want %d", spreadMachines, len(groups), strings.Join(sizes, ", "), want)
	}
}

// netLocationFallback: with the pool's first location out of capacity,
// one machine is made, in the second, and it says why.
func netLocationFallback(c *check) {
	ctx, cancel := c.callCtx()
	locs, err := c.r.s.Network.Locations(ctx)
	cancel()
	if err != nil || len(locs) < 2 {
		c.Fatalf("the Network hook has no two locations (%v, %v)", locs, err)
	}
	c.setFull(locs[0], true)
	c.Cleanup(func() { c.setFull(locs[0], false) })
	name := c.name("l")
	m, err := c.createWith(name, func(s *api.MachineSpec) { s.Placement = &api.PoolPlacement{Locations: locs[:2]} })
	if err != nil {
		c.Fatalf("create with locations %v, the first full: %v", locs[:2], err)
	}
	if m.Region != locs[1] {
		c.Errorf("machine %s is in region %q, want %s (the first location is full)", m.ID, m.Region, locs[1])
	}
	if b := c.backendMachine(m.ID); b.Location != locs[1] {
		c.Errorf("the backend has machine %s in %s, want %s", m.ID, b.Location, locs[1])
	}
	if !strings.Contains(m.PlacementNote, locs[0]) {
		c.Errorf("machine %s's placement note %q does not say why it is not in %s", m.ID, m.PlacementNote, locs[0])
	}
	c.expectNoOther(name, m.ID)
}

// setFull is the hook's SetFull, Fatal when it fails.
func (c *check) setFull(location string, full bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), c.r.opts.CallTimeout)
	defer cancel()
	if err := c.r.s.Network.SetFull(ctx, location, full); err != nil {
		c.Fatalf("the Network hook cannot set %s full=%v: %v", location, full, err)
	}
}

// expectNoOther fails when the backend has another machine named name
// than id (needs the Inventory hook; skipped without it).
func (c *check) expectNoOther(name, id string) {
	if c.r.s.Inventory == nil {
		return
	}
	ctx, cancel := c.callCtx()
	defer cancel()
	all, err := c.r.s.Inventory.Machines(ctx)
	if err != nil {
		c.Errorf("inventory: %v", err)
		return
	}
	for _, im := range all {
		if im.Name == name && im.ID != id {
			c.Errorf("the backend has a second machine %s named %s", im.ID, name)
		}
	}
}
