package conformance_test

import (
	"context"
	"testing"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/fake"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// specChange is a Hetzner client whose creates see the spec changed by
// change: a provider that drops part of the pool.
type specChange struct {
	full
	change func(*api.MachineSpec)
}

func (b specChange) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	b.change(&spec)
	return b.full.Create(ctx, call, spec)
}

// TestBrokenNetworkFailsTheRightBehaviours certifies the hetzner-cloud
// provider's network profile with a part of the pool dropped on the way
// to the API, and checks that exactly the behaviours of that part fail.
func TestBrokenNetworkFailsTheRightBehaviours(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*api.MachineSpec)
		failed []string
	}{
		{"pool network dropped", func(s *api.MachineSpec) { s.Network = nil },
			[]string{"net.public-ipv4-off", "net.private-network", "net.firewall-applied"}},
		{"spread dropped", func(s *api.MachineSpec) {
			if s.Placement != nil {
				s.Placement = &api.PoolPlacement{Locations: s.Placement.Locations}
			}
		}, []string{"net.spread-chunks"}},
		{"locations dropped", func(s *api.MachineSpec) {
			if s.Placement != nil {
				s.Placement = &api.PoolPlacement{Spread: s.Placement.Spread}
			}
		}, []string{"net.location-fallback"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startFake(t, "hetzner-cloud", fake.Options{Wrap: func(c provider.Client) provider.Client {
				return specChange{c.(full), tc.change}
			}})
			s.Profiles = []string{conformance.ProfileNetwork}
			report, err := conformance.Certify(t.Context(), s, conformance.Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			checkFailedExactly(t, report, tc.failed)
		})
	}
}
