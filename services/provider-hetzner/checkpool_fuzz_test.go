package hetzner

import (
	"net"
	"net/netip"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
)

// FuzzCheckIPRange: a pool's ipRange (user input) never panics the check,
// and is accepted only when it is a network address (no host bits) of a
// subnet of the network in the zone (the first one, for the attachment
// that joins in POST /servers), else refused as INVALID_INPUT naming the
// field.
func FuzzCheckIPRange(f *testing.F) {
	for _, s := range []string{"10.0.1.0/24", "10.0.1.7/24", "10.0.2.0/24", "", "ten", "10.0.1.0/33", "::/0", "10.0.1.0/24\x00"} {
		f.Add(s)
	}
	_, first, _ := net.ParseCIDR("10.0.1.0/24")
	_, second, _ := net.ParseCIDR("10.0.2.0/24")
	n := &hcloud.Network{ID: 1, Name: "backend", Subnets: []hcloud.NetworkSubnet{
		{IPRange: first, NetworkZone: hcloud.NetworkZoneEUCentral}, {IPRange: second, NetworkZone: hcloud.NetworkZoneEUCentral}}}
	zones := []locationZone{{location: "fsn1", zone: string(hcloud.NetworkZoneEUCentral)}}
	f.Fuzz(func(t *testing.T, ipRange string) {
		p, perr := netip.ParsePrefix(ipRange)
		for _, first := range []bool{false, true} {
			err := checkIPRange("network.privateNetworks[0].ipRange", api.NetworkAttachment{Network: "backend", IPRange: ipRange}, n, zones, first)
			want := perr == nil && p == p.Masked() && (p.String() == "10.0.1.0/24" || !first && p.String() == "10.0.2.0/24")
			if want != (err == nil) {
				t.Fatalf("ipRange %q (first %v): err %v, want accepted %v", ipRange, first, err, want)
			}
			if err != nil {
				if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != "network.privateNetworks[0].ipRange" {
					t.Fatalf("ipRange %q: %v (path %q)", ipRange, err, ce.Path())
				}
			}
		}
	})
}
