package robot

import (
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Provider identity.
const (
	// ProviderID is the provider's id on the bus: compute.internal.provider.hetzner-robot.<verb>.
	ProviderID = "hetzner-robot"
	// Version is the provider's semantic version, answered by describe.
	Version = "0.1.0"
)

// Account config fields (the manifest).
const (
	// FieldUser holds a secret reference to the Robot webservice user
	// (Robot → Settings → Webservice and app settings).
	FieldUser = "user"
	// FieldPassword holds a secret reference to that user's password.
	FieldPassword = "password"
	// FieldSSHPublicKey is the platform's SSH public key (an OpenSSH
	// authorized_keys line, not a secret): the rescue system is armed with
	// it, and installimage hands it on to the installed system. The pool's
	// access.privateKey must be its private half.
	FieldSSHPublicKey = "sshPublicKeyLine"
	// FieldKeyName is the name the key is stored under in Robot.
	FieldKeyName = "keyName"
)

// DefaultKeyName is the Robot key name of an account that names none.
const DefaultKeyName = "better-compute"

// Manifest is the account config of hetzner-robot: user and password
// (secret references, required), sshPublicKeyLine (required; not a
// secret, and so not named …Key, which the manifest reserves for secret
// references) and keyName (default DefaultKeyName).
func Manifest() []api.ManifestField {
	return []api.ManifestField{
		{Name: FieldUser, Type: provider.TypeSecret, Required: true,
			Description: "Reference to the Robot webservice user"},
		{Name: FieldPassword, Type: provider.TypeSecret, Required: true,
			Description: "Reference to the Robot webservice user's password"},
		{Name: FieldSSHPublicKey, Type: provider.TypeString, Required: true,
			Description: "The platform's SSH public key (authorized_keys line) the rescue and installed systems accept"},
		{Name: FieldKeyName, Type: provider.TypeString, Default: DefaultKeyName,
			Description: "Name of that key in Robot (stored on first use)"},
	}
}

// capabilities: power (resets), reinstall (boot the rescue system), list,
// delete.byKey and ssh.
var capabilities = []string{provider.CapabilityPower, provider.CapabilityReinstall, provider.CapabilityList,
	provider.CapabilityDeleteByKey, provider.CapabilitySSH}

// Definition returns the hetzner-robot provider definition: id
// ProviderID, version Version, provides metal, capabilities power,
// reinstall, list, delete.byKey and ssh, the Manifest, and a constructor
// configured by opts. The constructor answers INVALID_CONFIG
// (details.path "options.endpoint" for an endpoint that is not an
// absolute http(s) URL, "config.sshPublicKeyLine" for a key that does not
// parse); it makes no API call.
func Definition(opts ...Option) *provider.Defined {
	s := newSettings(opts)
	return provider.MustDefine(provider.Definition{
		ID:           ProviderID,
		Version:      Version,
		Provides:     []string{api.KindMetal},
		Manifest:     Manifest(),
		Capabilities: capabilities,
		New: func(bc provider.BuildContext) (provider.Client, error) {
			return newClient(s, bc.Account)
		},
	})
}
