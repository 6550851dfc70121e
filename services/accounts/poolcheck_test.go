package accounts_test

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// anyToken resolves every reference to one token.
type anyToken struct{}

func (anyToken) Resolve(context.Context, string) (string, error) { return "hz-test-token", nil }

// startHetzner serves the Hetzner provider on the emulator beside e's
// services and returns the emulator and an account of it (location fsn1).
func startHetzner(t *testing.T, e *env) (*emulator.Emulator, api.Account) {
	t.Helper()
	srv, err := emulator.Start(emulator.Options{}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	nc := e.Connect(t)
	svc, err := provider.Serve(nc, hetzner.Definition(hetzner.WithEndpoint(srv.URL())), provider.ServeOptions{Logger: zerolog.Nop(),
		Resolver: func(string) provider.SecretResolver { return anyToken{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	a := must[api.Account](t, e.NC, bus.ResourceAccounts, "create", map[string]any{
		"provider": hetzner.ProviderID, "name": "hz", "config": map[string]any{"token": secretT1, "location": "fsn1"}})
	return srv.Emulator(), a
}

// pools.create asks the account's provider (checkpool) about the pool's
// network and placement and refuses, naming the field, what the project
// cannot have; what it can have is stored with the pool.
func TestPoolCreateChecksNetworkAndPlacement(t *testing.T) {
	e := start(t, 0)
	emu, acct := startHetzner(t, e)
	emu.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central")
	emu.AddNetwork("us", "10.1.0.0/16", "10.1.1.0/24@us-east")
	emu.AddFirewall("web")
	pool := func(name string, network, placement map[string]any) map[string]any {
		p := map[string]any{"name": name, "class": api.PoolClassProvider, "agent": api.PoolAgentNone, "providerAccountId": acct.ID,
			"flavors": []map[string]any{{"name": "small", "offerId": "cx23", "image": "ubuntu-24.04"}}}
		if network != nil {
			p["network"] = network
		}
		if placement != nil {
			p["placement"] = placement
		}
		return p
	}
	nets := func(n string) map[string]any {
		return map[string]any{"privateNetworks": []map[string]any{{"network": n}}}
	}
	refusals := []struct {
		name               string
		network, placement map[string]any
		path               string
	}{
		{"unknown network", nets("nope"), nil, "network.privateNetworks[0].network"},
		{"network in another zone", nets("us"), nil, "network.privateNetworks[0].network"},
		{"unknown firewall", map[string]any{"firewalls": []string{"db"}}, nil, "network.firewalls[0]"},
		{"unknown location", nil, map[string]any{"locations": []string{"fsn1", "mars"}}, "placement.locations[1]"},
		{"no public IP and no network", map[string]any{"publicIPv4": false, "publicIPv6": false}, nil, "network.publicIPv4"},
		{"a Proxmox field", map[string]any{"vlan": 10}, nil, "network.vlan"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "create", pool("p", tc.network, tc.placement))
			wantErr(t, err, api.CodeInvalidInput, tc.path)
		})
	}
	network := nets("backend")
	network["firewalls"], network["publicIPv4"] = []string{"web"}, false
	p := must[api.Pool](t, e.NC, bus.ResourcePools, "create", pool("ok", network, map[string]any{"spread": true, "locations": []string{"fsn1", "nbg1"}}))
	if p.Network == nil || len(p.Network.PrivateNetworks) != 1 || p.Network.PublicIPv4 == nil || *p.Network.PublicIPv4 ||
		p.Placement == nil || !p.Placement.Spread || len(p.Placement.Locations) != 2 {
		t.Fatalf("pool = %+v (network %+v, placement %+v), want network and placement stored", p, p.Network, p.Placement)
	}
}

// A provider that does not claim a pool capability refuses the field at
// pools.create (the fake provider claims none).
func TestPoolCreateRefusesUnclaimedCapability(t *testing.T) {
	e := start(t, 0)
	acct := createAccount(t, e, "fake", "")
	_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "create", map[string]any{
		"name": "p", "class": api.PoolClassProvider, "agent": api.PoolAgentNone, "providerAccountId": acct.ID,
		"flavors": []map[string]any{{"name": "small", "offerId": "cx22-fsn1"}}, "placement": map[string]any{"spread": true}})
	wantErr(t, err, api.CodeInvalidInput, "placement.spread")
}
