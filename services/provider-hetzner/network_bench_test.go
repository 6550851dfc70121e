package hetzner

import (
	"strconv"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// BenchmarkCreateRequests reports the API requests one create costs
// (requests/create) for a plain pool, a pool naming its network and
// firewall by name, a pool whose network has an ipRange (attached after
// the create), a spread pool and a pool whose first location is full.
func BenchmarkCreateRequests(b *testing.B) {
	for _, tc := range []struct {
		name string
		spec func(i int) api.MachineSpec
		full bool
	}{
		{"plain", func(int) api.MachineSpec { return api.MachineSpec{} }, false},
		{"network-by-name", func(int) api.MachineSpec {
			return api.MachineSpec{Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend"}}, Firewalls: []string{"web"}}}
		}, false},
		{"network-ipRange", func(int) api.MachineSpec {
			return api.MachineSpec{Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend", IPRange: "10.0.128.0/17"}}}}
		}, false},
		{"spread", func(int) api.MachineSpec {
			return api.MachineSpec{PoolID: "pool_bench", Placement: &api.PoolPlacement{Spread: true}}
		}, false},
		{"first-location-full", func(int) api.MachineSpec {
			return api.MachineSpec{Placement: &api.PoolPlacement{Locations: []string{"fsn1", "nbg1"}}}
		}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnvWith(b, emulator.Options{RateLimitSize: 1 << 30, RateLimitRefillPerSecond: 1 << 20})
			e.emu.AddNetwork("backend", "10.0.0.0/16", "10.0.0.0/17@eu-central", "10.0.128.0/17@eu-central")
			e.emu.AddFirewall("web")
			e.emu.SetLocationFull("fsn1", tc.full)
			e.emu.ResetCalls()
			n := 0
			for b.Loop() {
				spec := tc.spec(n)
				spec.Name, spec.OfferID, spec.Image = "b-"+strconv.Itoa(n), "cx23", "ubuntu-24.04"
				providertest.MustCreate(b, e.client, e.call("inst_b"+strconv.Itoa(n)), spec)
				n++
			}
			b.ReportMetric(float64(e.calls())/float64(n), "requests/create")
		})
	}
}
