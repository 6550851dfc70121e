package conformance

import (
	"net/netip"

	"better-compute.io/compute/pkg/api"
)

// Addresses of the subject's range each behaviour hands out (the
// control plane's job: at most one machine holds one at a time).
const (
	addrApplied = 0 // net.static.applied
	addrFirst   = 1 // net.static.never-reused, two machines
	addrSecond  = 2
)

// createSpec is create with a spec of its own (name's key, the subject's
// offer and image, and what edit sets), its deletion a cleanup.
func (c *check) createSpec(name string, edit func(*api.MachineSpec)) (*api.ExternalMachine, error) {
	spec := c.spec(name)
	edit(&spec)
	ctx, cancel := c.callCtx()
	defer cancel()
	m, err := c.remote().Create(ctx, c.acct(), name, spec)
	if err != nil {
		return nil, err
	}
	c.cleanupMachine(m.ID)
	return m, nil
}

// mustCreateSpec is createSpec, stopping the behaviour when it fails.
func (c *check) mustCreateSpec(name string, edit func(*api.MachineSpec)) *api.ExternalMachine {
	m, err := c.createSpec(name, edit)
	if err != nil {
		c.Fatalf("create %s: %v", name, err)
	}
	return m
}

// netMachine is how machine id is attached and placed (NodeNetwork.Machine).
func (c *check) netMachine(id string) NodeMachine {
	ctx, cancel := c.callCtx()
	defer cancel()
	nm, err := c.r.s.NodeNetwork.Machine(ctx, id)
	if err != nil {
		c.Fatalf("the NodeNetwork hook cannot tell how machine %s is attached: %v", id, err)
	}
	return nm
}

// span is the subject's address range, parsed; it must hold addrSecond+1
// addresses.
func (c *check) span() api.AddressSpan {
	rng := c.r.s.NodeNetwork.Pool().Addresses
	s, err := rng.Parse("addresses")
	if err != nil || s.Size() <= addrSecond {
		c.Fatalf("the NodeNetwork hook's address range %+v is unusable (%v): it needs %d addresses", rng, err, addrSecond+1)
	}
	return s
}

// netVLANApplied: the machine's NIC is on the pool's bridge with its tag.
func netVLANApplied(c *check) {
	nw := c.r.s.NodeNetwork.Pool().Network
	if nw.VLAN == 0 {
		c.Fatalf("the NodeNetwork hook's pool network has no VLAN tag to check")
	}
	m := c.mustCreateSpec(c.name("vlan"), func(s *api.MachineSpec) { s.Network = &nw })
	got := c.netMachine(m.ID)
	if (nw.Bridge != "" && got.Bridge != nw.Bridge) || got.VLAN != nw.VLAN {
		c.Errorf("machine %s is on bridge %q tag %d, want bridge %q tag %d", m.ID, got.Bridge, got.VLAN, nw.Bridge, nw.VLAN)
	}
}

// netStaticApplied: a machine carries the static address it was made
// with, in the backend and in what get reports once it runs.
func netStaticApplied(c *check) {
	span := c.span()
	want := span.Static(span.At(addrApplied))
	m := c.mustCreateSpec(c.name("static"), func(s *api.MachineSpec) { s.Address = &want })
	c.expectAddress(m.ID, want)
}

// expectAddress checks that machine id carries address a, in the backend
// and first among the addresses get reports once it runs.
func (c *check) expectAddress(id string, a api.StaticAddress) {
	if got := c.netMachine(id).Address; got != a.Address {
		c.Errorf("machine %s has address %q in the backend, want %s", id, got, a.Address)
	}
	running := c.waitState(id, api.StateRunning)
	host := netip.MustParsePrefix(a.Address).Addr().String()
	if len(running.Addresses) == 0 || running.Addresses[0] != host {
		c.Errorf("machine %s reports addresses %v, want %s first", id, running.Addresses, host)
	}
}

// netStaticNeverReused: two machines alive at once, made with distinct
// addresses, each carry their own.
func netStaticNeverReused(c *check) {
	span := c.span()
	first, second := span.Static(span.At(addrFirst)), span.Static(span.At(addrSecond))
	a := c.mustCreateSpec(c.name("held"), func(s *api.MachineSpec) { s.Address = &first })
	b := c.mustCreateSpec(c.name("next"), func(s *api.MachineSpec) { s.Address = &second })
	c.expectAddress(a.ID, first)
	c.expectAddress(b.ID, second)
}

// netFullNodeSkipped: a full allowed node is skipped; with every allowed
// node full, nothing is made.
func netFullNodeSkipped(c *check) {
	nodes := c.r.s.NodeNetwork.Pool().Placement.Nodes
	if len(nodes) < 2 {
		c.Fatalf("the NodeNetwork hook's placement names %d nodes; the behaviour needs two", len(nodes))
	}
	allowed := &api.PoolPlacement{Nodes: nodes[:2]}
	c.fill(nodes[0])
	m := c.mustCreateSpec(c.name("place"), func(s *api.MachineSpec) { s.Placement = allowed })
	if got := c.netMachine(m.ID).Node; got != nodes[1] {
		c.Errorf("machine %s landed on %s with %s full, want %s", m.ID, got, nodes[0], nodes[1])
	}
	c.fill(nodes[1])
	name := c.name("nowhere")
	_, err := c.createSpec(name, func(s *api.MachineSpec) { s.Placement = allowed })
	c.expectCode("create with every allowed node full", err, api.CodeCapacityUnavailable)
	c.expectNone(name)
}

// fill makes node full until the behaviour ends.
func (c *check) fill(node string) {
	ctx, cancel := c.callCtx()
	defer cancel()
	undo, err := c.r.s.NodeNetwork.FillNode(ctx, node)
	if err != nil {
		c.Incompletef("the NodeNetwork hook cannot fill node %s: %v", node, err)
	}
	c.Cleanup(undo)
}
