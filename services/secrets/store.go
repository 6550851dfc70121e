package secrets

import (
	"context"
	"fmt"

	"better-compute.io/compute/pkg/api"
)

// Store resolves the secret references of one scheme. The service serves
// secret:// and env:// itself; Options.Stores adds stores for other schemes
// (a Vault store for vault://).
type Store interface {
	// Scheme is the reference scheme served: "secret", "env" or "vault".
	Scheme() string
	// Resolve returns the value ref (of Scheme) names, read on behalf of
	// tenant (a valid tenant id). It decides whether tenant may read ref.
	// Errors: ACCESS_DENIED, NOT_FOUND, UNAVAILABLE, INTERNAL; messages never
	// quote a value.
	Resolve(ctx context.Context, tenant string, ref api.SecretRef) (string, error)
}

// broker routes a reference to the store of its scheme.
type broker map[string]Store

// newBroker indexes stores by scheme. Errors: a scheme api.ParseSecretRef
// does not know (no reference could reach it), a scheme served twice.
func newBroker(stores []Store) (broker, error) {
	b := broker{}
	for _, s := range stores {
		scheme := s.Scheme()
		if !api.LooksLikeSecretRef(scheme + "://") {
			return nil, fmt.Errorf("store scheme %q is not a secret reference scheme (secret, env, vault)", scheme)
		}
		if _, dup := b[scheme]; dup {
			return nil, fmt.Errorf("two stores serve %s:// references", scheme)
		}
		b[scheme] = s
	}
	return b, nil
}

// resolve parses ref and asks the store of its scheme. Errors: INVALID_INPUT
// (path ref) for a malformed reference, INVALID_CONFIG (path ref) for a
// scheme without a configured store, and those of Store.Resolve.
func (b broker) resolve(ctx context.Context, tenant, ref string) (string, error) {
	r, err := api.ParseSecretRef(ref)
	if err != nil {
		return "", api.InvalidInput("ref", "ref: %s", api.AsComputeError(err).Message)
	}
	s, ok := b[r.Scheme]
	if !ok {
		return "", api.InvalidConfig("ref", "no secret store is configured for %s:// references", r.Scheme)
	}
	return s.Resolve(ctx, tenant, r)
}
