package reconciler

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
)

// Limits on instance requests.
const (
	MaxUserDataBytes = 32 * 1024
	MaxSSHKeys       = 100
	MaxSSHKeyBytes   = 16 * 1024
)

var instanceNamePattern = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9.-]{0,61}[a-zA-Z0-9])?$`)

// validateCreate checks the fields of a create request that need no lookup.
func validateCreate(in *api.InstanceCreateRequest) error {
	imageErr := api.CheckImage("image", in.Image, false)
	keyErr := api.CheckIdempotencyKey(in.IdempotencyKey)
	switch {
	case !api.ValidID(api.PrefixPool, in.PoolID):
		return api.InvalidInput("poolId", "poolId must be a pool id (pool_…)")
	case in.Flavor == "":
		return api.InvalidInput("flavor", "flavor is required")
	case in.Name != "" && !instanceNamePattern.MatchString(in.Name):
		return api.InvalidInput("name", "name must be a hostname label: letters, digits, '.' and '-', at most 63 characters")
	case imageErr != nil:
		return imageErr
	case keyErr != nil:
		return keyErr
	case in.Power != "" && in.Power != api.PowerOn && in.Power != api.PowerOff:
		return api.InvalidInput("power", "power must be %q or %q", api.PowerOn, api.PowerOff)
	}
	if err := validateUserData(in.UserData); err != nil {
		return err
	}
	if err := api.ValidateLabels("labels", in.Labels); err != nil {
		return err
	}
	return validateSSHKeys(in.SSHKeys)
}

// validateUserData refuses user data a provider would have to filter: it may
// carry only the tenant's own cloud-init and SSH keys, never a secret
// reference or a private key.
func validateUserData(ud string) error {
	switch {
	case len(ud) > MaxUserDataBytes:
		return api.InvalidInput("userData", "userData is larger than %d bytes", MaxUserDataBytes)
	case strings.Contains(ud, "secret://") || strings.Contains(ud, "env://") || strings.Contains(ud, "vault://"):
		return api.InvalidInput("userData", "userData must not carry secret references: providers pass it to the machine as is")
	case strings.Contains(ud, "PRIVATE KEY-----"):
		return api.InvalidInput("userData", "userData must not carry private keys")
	}
	return nil
}

// validateSSHKeys accepts OpenSSH authorized_keys public keys only.
func validateSSHKeys(keys []string) error {
	if len(keys) > MaxSSHKeys {
		return api.InvalidInput("sshKeys", "at most %d SSH keys", MaxSSHKeys)
	}
	for i, k := range keys {
		path := fmt.Sprintf("sshKeys[%d]", i)
		if len(k) == 0 || len(k) > MaxSSHKeyBytes || strings.ContainsAny(k, "\r\n") {
			return api.InvalidInput(path, "an SSH key is one line of 1 to %d bytes", MaxSSHKeyBytes)
		}
		if _, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil || len(rest) != 0 {
			return api.InvalidInput(path, "not an OpenSSH public key (want e.g. \"ssh-ed25519 AAAA… comment\")")
		}
	}
	return nil
}

// validateAction checks a power action.
func validateAction(action api.PowerAction) error {
	if !slices.Contains(api.PowerActions(), action) {
		return api.InvalidInput("action", "action must be one of %v", api.PowerActions())
	}
	return nil
}
