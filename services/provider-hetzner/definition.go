package hetzner

import (
	"slices"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Provider identity.
const (
	// ProviderID is the provider's id on the bus: compute.internal.provider.hetzner-cloud.<verb>.
	ProviderID = "hetzner-cloud"
	// Version is the provider's semantic version, answered by describe.
	Version = "0.1.0"
)

// Account config fields (the manifest).
const (
	// FieldToken holds a secret reference to a Hetzner Cloud API token
	// (read/write) of the project the account uses.
	FieldToken = "token"
	// FieldLocation is the Hetzner location machines are made in, unless a
	// machine spec or an offer query names a region.
	FieldLocation = "location"
)

// DefaultLocation is the location of an account that names none.
const DefaultLocation = "fsn1"

// Locations are the Hetzner Cloud locations an account may choose.
var Locations = []string{"fsn1", "nbg1", "hel1", "ash", "hil", "sin"}

// Manifest is the account config of hetzner-cloud: token (secret reference,
// required) and location (one of Locations, default DefaultLocation).
func Manifest() []api.ManifestField {
	return []api.ManifestField{
		{Name: FieldToken, Type: provider.TypeSecret, Required: true,
			Description: "Reference to a Hetzner Cloud API token (read & write) of the project"},
		{Name: FieldLocation, Type: provider.TypeOption, Options: slices.Clone(Locations), Default: DefaultLocation,
			Description: "Hetzner location for machines and offers unless a request names a region"},
	}
}

// capabilities are the provider's: every call capability (labels: server
// labels beside the system ones, see labels.withUser), ssh (its machines
// answer SSH at the address it reports; pkg/access), and the pool
// capabilities of Hetzner Cloud: private networks, firewalls, public IPs
// on or off (network.go), spread placement groups (placement.go) and
// ordered locations (create.go's post).
var capabilities = []string{provider.CapabilityPower, provider.CapabilityReinstall, provider.CapabilityList,
	provider.CapabilityDeleteByKey, provider.CapabilitySSH, provider.CapabilityLabels, provider.CapabilityResize, provider.CapabilityMetrics,
	provider.CapabilityNetworkPrivate, provider.CapabilityNetworkFirewalls, provider.CapabilityNetworkPublicIP,
	provider.CapabilityPlacementSpread, provider.CapabilityPlacementLocations}

// Definition returns the hetzner-cloud provider definition: id ProviderID,
// version Version, provides vps, capabilities power, reinstall, list,
// delete.byKey, ssh, labels, resize, metrics, network.private,
// network.firewalls, network.publicIP, placement.spread and
// placement.locations, the Manifest, and a constructor configured by opts.
//
// The constructor answers INVALID_CONFIG (details.path "options.<name>")
// when an option is unusable (a malformed endpoint or label prefix, a
// non-positive poll interval); it makes no API call.
func Definition(opts ...Option) *provider.Defined {
	s := newSettings(opts)
	return provider.MustDefine(provider.Definition{
		ID:           ProviderID,
		Version:      Version,
		Provides:     []string{api.KindVPS},
		Manifest:     Manifest(),
		Capabilities: capabilities,
		New: func(bc provider.BuildContext) (provider.Client, error) {
			return newClient(s, bc.Account)
		},
	})
}
