package proxmox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/accounts"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// Issue 14: pools.create, through the bus (accounts service, this
// provider, the emulator), refuses what the account cannot have, naming
// the field, and writes nothing: an unknown node, a storage no allowed
// node has, a bridge a node lacks, a VLAN out of range, a gateway outside
// the CIDR, a range overlapping another pool's of the account. A pool the
// account can have is written with its network and placement.
func TestPoolCreateRefusesWhatTheAccountCannotHave(t *testing.T) {
	e := newEnv(t, threeNodes)
	s := newStack(t, e)
	svc, err := accounts.Start(s.env.NC, s.env.Stores, accounts.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	create := func(nw *api.PoolNetwork, pl *api.PoolPlacement, storage string) (api.Pool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := api.PoolCreateRequest{Class: api.PoolClassProvider, Agent: api.PoolAgentNone, ProviderAccountID: e.acct.ID,
			Flavors: []api.Flavor{{Name: "small", OfferID: testOffer, Image: testTemplate, Storage: storage}}, Network: nw, Placement: pl}
		var out api.Pool
		err := bus.Call(ctx, s.env.NC, bus.Command(testTenant, bus.ResourcePools, "create"), req, &out)
		return out, err
	}
	rng := func(cidr, gw string) *api.AddressRange { return &api.AddressRange{CIDR: cidr, Gateway: gw} }
	ok, err := create(&api.PoolNetwork{Bridge: "vmbr1", VLAN: 42, Addresses: rng("10.50.0.0/24", "10.50.0.1")},
		&api.PoolPlacement{Nodes: []string{"pve1", "pve2"}}, "fast")
	if err != nil || ok.Network == nil || ok.Network.VLAN != 42 || ok.Placement == nil || len(ok.Placement.Nodes) != 2 {
		t.Fatalf("a pool the account can have: %+v, %v", ok, err)
	}
	cases := []struct {
		name    string
		nw      *api.PoolNetwork
		pl      *api.PoolPlacement
		storage string
		path    string
	}{
		{"unknown node", nil, &api.PoolPlacement{Nodes: []string{"pve1", "pve7"}}, "", "placement.nodes[1]"},
		{"unknown storage", nil, nil, "nope", "flavors[0].storage"},
		{"storage no allowed node has", nil, &api.PoolPlacement{Nodes: []string{"pve1"}}, "fast", "flavors[0].storage"},
		{"bridge a node lacks", &api.PoolNetwork{Bridge: "vmbr1"}, nil, "", "network.bridge"},
		{"vlan out of range", &api.PoolNetwork{VLAN: 5000}, nil, "", "network.vlan"},
		{"gateway outside the cidr", &api.PoolNetwork{Addresses: rng("10.60.0.0/24", "10.61.0.1")}, nil, "", "network.addresses.gateway"},
		{"range overlapping another pool's", &api.PoolNetwork{Addresses: rng("10.50.0.128/25", "10.50.0.129")}, nil, "", "network.addresses.cidr"},
	}
	for _, tc := range cases {
		_, err := create(tc.nw, tc.pl, tc.storage)
		if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != tc.path {
			t.Errorf("%s: %v, want INVALID_INPUT %s", tc.name, err, tc.path)
		}
	}
	keys, err := s.env.Stores.PoolTable().Keys(context.Background(), testTenant)
	if err != nil || len(keys) != 2 { // the stack's pool and ok
		t.Fatalf("%d pools written (%v), want the stack's and the one accepted", len(keys), err)
	}
}

// Offers asked for a pool (accounts.offers with poolId, through the bus)
// are available only where that pool's creates place: with pve2 full, a
// pool on pve1 and pve2 has no room for large (32 GiB) though pve3 has,
// so the account's offer says available and the pool's does not. End to
// end (instance API, reconciler, provider, emulator), the pool's large
// instance is refused for capacity naming placement.nodes, as the offer
// said, and its small one skips the full pve2 for pve1. A pool of another
// account and a placement given beside a pool are refused.
func TestPoolOffersSeeThePoolsNodes(t *testing.T) {
	e := newEnv(t, threeNodes)
	if _, err := e.emu.SeedVMs(emulator.SeedSpec{Count: 1, FirstVMID: 500, Node: "pve2", Running: true, MemoryMiB: 62 << 10}); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, e)
	svc, err := accounts.Start(s.env.NC, s.env.Stores, accounts.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var pool api.Pool
	if err := bus.Call(ctx, s.env.NC, bus.Command(testTenant, bus.ResourcePools, "create"), api.PoolCreateRequest{
		Class: api.PoolClassProvider, Agent: api.PoolAgentNone, ProviderAccountID: e.acct.ID,
		Flavors:   []api.Flavor{{Name: "large", OfferID: "large", Image: testTemplate}, {Name: testOffer, OfferID: testOffer, Image: testTemplate}},
		Placement: &api.PoolPlacement{Nodes: []string{"pve1", "pve2"}},
	}, &pool); err != nil {
		t.Fatal(err)
	}
	offers := func(req api.AccountOffersRequest) (map[string]bool, error) {
		var out api.List[api.Offer]
		err := bus.Call(ctx, s.env.NC, bus.Command(testTenant, bus.ResourceAccounts, "offers"), req, &out)
		available := map[string]bool{}
		for _, o := range out.Items {
			available[o.ID] = o.Available
		}
		return available, err
	}
	account, err := offers(api.AccountOffersRequest{ID: e.acct.ID})
	if err != nil || !account["large"] || !account[testOffer] {
		t.Fatalf("account offers = %v (%v), want large and small available (pve3 has room)", account, err)
	}
	forPool, err := offers(api.AccountOffersRequest{ID: e.acct.ID, PoolID: pool.ID})
	if err != nil || forPool["large"] || !forPool[testOffer] {
		t.Fatalf("pool offers = %v (%v), want large unavailable (pve1 8 GiB, pve2 full), small available", forPool, err)
	}
	var large, small api.Instance
	if err := s.call("create", api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "large", Name: "big"}, &large); err != nil {
		t.Fatal(err)
	}
	if err := s.call("create", api.InstanceCreateRequest{PoolID: pool.ID, Flavor: testOffer, Name: "little"}, &small); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, large.ID, "refused for capacity", func(i *api.Instance, err error) bool {
		for _, c := range i.Status.Conditions {
			if c.Type == api.ConditionProviderError && c.Reason == api.ReasonOf(api.CodeCapacityUnavailable) &&
				strings.Contains(c.Message, "no allowed node") {
				return err == nil && i.Status.Machine == nil
			}
		}
		return false
	})
	ran := s.waitFor(t, small.ID, "running", func(i *api.Instance, err error) bool { return err == nil && i.Status.Phase == api.PhaseRunning })
	if v := e.vm(t, mustAtoi(t, ran.Status.Machine.ID)); v.Node != "pve1" {
		t.Fatalf("small VM on %s, want pve1 (pve2 full, pve3 not the pool's)", v.Node)
	}
	_, err = offers(api.AccountOffersRequest{ID: e.acct.ID, PoolID: pool.ID, Query: api.OfferQuery{Placement: &api.PoolPlacement{}}})
	if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != "query.placement" {
		t.Fatalf("poolId and query.placement: %v, want INVALID_INPUT query.placement", err)
	}
	other := api.Pool{ID: api.NewID(api.PrefixPool), TenantID: testTenant, Class: api.PoolClassProvider,
		ProviderAccountID: api.NewID(api.PrefixAccount), Agent: api.PoolAgentNone, Version: 1, Flavors: pool.Flavors}
	if _, err := s.env.Stores.PoolTable().Create(ctx, testTenant, other.ID, other); err != nil {
		t.Fatal(err)
	}
	_, err = offers(api.AccountOffersRequest{ID: e.acct.ID, PoolID: other.ID})
	if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != "poolId" {
		t.Fatalf("pool of another account: %v, want INVALID_INPUT poolId", err)
	}
}
