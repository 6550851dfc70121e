package provider_test

import (
	"context"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
)

// checkingClient is a bare client that refuses every pool naming network
// "nope" (provider.PoolChecker).
type checkingClient struct{ bareClient }

func (checkingClient) CheckPool(_ context.Context, _ *provider.Call, req api.ProviderPoolCheckRequest) error {
	if req.Network != nil && len(req.Network.PrivateNetworks) > 0 && req.Network.PrivateNetworks[0].Network == "nope" {
		return api.InvalidInput("network.privateNetworks[0].network", "no network nope")
	}
	return nil
}

// checkpool refuses each pool field whose capability the provider does not
// claim, naming the field; with every capability claimed it asks the
// client's CheckPool.
func TestCheckPoolCapabilities(t *testing.T) {
	env := bustest.Start(t)
	bare, _ := tinyProvider(t, "bare", nil, func(st *tinyState) provider.Client { return &checkingClient{bareClient{st: st}} })
	all, _ := tinyProvider(t, "all", provider.PoolCapabilities, func(st *tinyState) provider.Client { return &checkingClient{bareClient{st: st}} })
	serve(t, env.NC, bare)
	serve(t, env.NC, all)
	no := false
	cases := []struct {
		name      string
		network   *api.PoolNetwork
		placement *api.PoolPlacement
		path      string // refused by "bare" at this path
	}{
		{"private networks", &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "a"}}}, nil, "network.privateNetworks"},
		{"firewalls", &api.PoolNetwork{Firewalls: []string{"f"}}, nil, "network.firewalls"},
		{"no public IPv4", &api.PoolNetwork{PublicIPv4: &no}, nil, "network.publicIPv4"},
		{"no public IPv6", &api.PoolNetwork{PublicIPv6: &no}, nil, "network.publicIPv6"},
		{"spread", nil, &api.PoolPlacement{Spread: true}, "placement.spread"},
		{"locations", nil, &api.PoolPlacement{Locations: []string{"fsn1"}}, "placement.locations"},
		{"nothing asked", &api.PoolNetwork{}, &api.PoolPlacement{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := api.ProviderPoolCheckRequest{Account: account("pacct_1", 1), Network: tc.network, Placement: tc.placement}
			err := provider.Remote{NC: env.NC, ID: "bare"}.CheckPool(testCtx(t), req)
			ce := api.AsComputeError(err)
			switch {
			case tc.path == "" && err != nil:
				t.Fatalf("bare refused %v", err)
			case tc.path != "" && (ce.Code != api.CodeInvalidInput || ce.Path() != tc.path):
				t.Fatalf("bare answered %v (path %q), want INVALID_INPUT at %s", err, ce.Path(), tc.path)
			}
			if err := (provider.Remote{NC: env.NC, ID: "all"}).CheckPool(testCtx(t), req); err != nil {
				t.Fatalf("all refused %v", err)
			}
		})
	}
	err := provider.Remote{NC: env.NC, ID: "all"}.CheckPool(testCtx(t), api.ProviderPoolCheckRequest{Account: account("pacct_1", 1),
		Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "nope"}}}})
	if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != "network.privateNetworks[0].network" {
		t.Fatalf("the client's refusal came back as %v", err)
	}
}
