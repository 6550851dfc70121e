package secrets

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// Store resolves the secret references of one scheme. The service builds
// the secret:// and env:// stores itself; Options.Vault is the vault://
// store.
type Store interface {
	// Resolve returns the value ref (of Scheme) names, read on behalf of
	// tenant (a valid tenant id the broker allowed). ref is of the store's scheme. Errors: ACCESS_DENIED,
	// NOT_FOUND, UNAVAILABLE, INTERNAL; messages never quote a value.
	Resolve(ctx context.Context, tenant string, ref api.SecretRef) (string, error)
}

// route is the store of one configured scheme and, for env:// and
// vault://, the tenants allowed to use it (nil for secret://: the store
// itself binds each secret to its tenant).
type route struct {
	store   Store
	tenants map[string]bool
}

// broker routes a reference to the store of its scheme; a scheme not
// configured has no route.
type broker map[string]route

// newBroker routes each configured scheme to its store in stores (by
// scheme; a nil store is one not given). Errors (plain): a configuration
// checkStores refuses, a configured scheme without a store.
func newBroker(configs []StoreConfig, stores map[string]Store) (broker, error) {
	if err := checkStores(configs); err != nil {
		return nil, err
	}
	b := broker{}
	for _, c := range configs {
		s := stores[c.Scheme]
		if s == nil {
			return nil, fmt.Errorf("store %q: no %s store is configured (Options.Vault)", c.Scheme, c.Scheme)
		}
		rt := route{store: s}
		if c.Scheme != api.SchemeSecret {
			rt.tenants = map[string]bool{}
			for _, t := range c.tenantList() {
				rt.tenants[t] = true
			}
		}
		b[c.Scheme] = rt
	}
	return b, nil
}

// schemes lists the configured schemes, sorted: "env, secret".
func (b broker) schemes() string { return strings.Join(slices.Sorted(maps.Keys(b)), ", ") }

// resolve parses ref and asks the store of its scheme. Errors:
// INVALID_INPUT (path ref) for a malformed reference; unconfigured (path
// ref, details.scheme) for a scheme without a configured store;
// ACCESS_DENIED for a tenant the store's configuration does not list
// (checked before the store is asked, so others cannot probe it); those of
// Store.Resolve.
func (b broker) resolve(ctx context.Context, tenant, ref string, unconfigured api.Code) (string, error) {
	r, err := api.ParseSecretRef(ref)
	if err != nil {
		return "", api.InvalidInput("ref", "ref: %s", api.AsComputeError(err).Message)
	}
	rt, ok := b[r.Scheme]
	switch {
	case !ok:
		ce := api.Errorf(unconfigured, "no secret store is configured for %s:// references (this service serves %s)",
			r.Scheme, b.schemes()).WithPath("ref")
		ce.Details.Scheme = r.Scheme
		return "", ce
	case rt.tenants != nil && !rt.tenants[tenant]:
		return "", api.Errorf(api.CodeAccessDenied, "tenant %q may not read %s:// references", tenant, r.Scheme)
	}
	return rt.store.Resolve(ctx, tenant, r)
}
