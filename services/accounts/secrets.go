package accounts

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// refAt is a secret reference found in a config, and its path.
type refAt struct {
	path, ref string
}

// secretRefs returns every string in v (a decoded JSON value) that looks like
// a secret reference, with its path under path ("config.nested.apiKey",
// "config.keys[1]"), in a stable order (object keys sorted).
func secretRefs(path string, v any) []refAt {
	switch x := v.(type) {
	case string:
		if api.LooksLikeSecretRef(x) {
			return []refAt{{path: path, ref: x}}
		}
	case map[string]any:
		var out []refAt
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, secretRefs(path+"."+k, x[k])...)
		}
		return out
	case []any:
		var out []refAt
		for i, item := range x {
			out = append(out, secretRefs(fmt.Sprintf("%s[%d]", path, i), item)...)
		}
		return out
	}
	return nil
}

// checkSecrets asks the secrets service (compute.internal.secrets.check)
// whether every secret reference in config resolves for tenant, without
// receiving any value. Errors: the secrets service's error (ACCESS_DENIED for
// another tenant's reference, NOT_FOUND for a missing secret, INVALID_INPUT
// for a scheme without a store, UNAVAILABLE) with details.path set to the
// reference's config path.
func (s *service) checkSecrets(ctx context.Context, tenant string, config map[string]any) error {
	for _, r := range secretRefs("config", config) {
		err := bus.Call(ctx, s.nc, bus.SecretsCheck, api.SecretResolveRequest{TenantID: tenant, Ref: r.ref}, nil)
		if err != nil {
			return atPath(err, r.path)
		}
	}
	return nil
}

// checkAccessKey asks the secrets service whether the private key
// reference of a pool's access resolves for tenant (as checkSecrets does
// for an account's config), so a pool naming another tenant's key, a
// missing secret or a scheme without a store is refused at create, not at
// its first configure. No access: nil. Errors: checkSecrets's, at path
// access.privateKey.
func (s *service) checkAccessKey(ctx context.Context, tenant string, access *api.PoolAccess) error {
	if access == nil {
		return nil
	}
	if err := bus.Call(ctx, s.nc, bus.SecretsCheck, api.SecretResolveRequest{TenantID: tenant, Ref: access.PrivateKey}, nil); err != nil {
		return atPath(err, "access.privateKey")
	}
	return nil
}

// atPath returns err as a new ComputeError of the same code and details with
// details.path set to path and the path leading the message.
func atPath(err error, path string) *api.ComputeError {
	ce := api.AsComputeError(err)
	out := &api.ComputeError{Code: ce.Code, Message: path + ": " + ce.Message, Details: ce.Details}
	return out.WithPath(path)
}
