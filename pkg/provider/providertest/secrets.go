// Package providertest holds what the tests of provider implementations
// share: a static secret resolver, a reply barrier for racing calls,
// ComputeError assertions, serving a definition over an embedded bus, and
// the reconciler's lifecycle of one machine. It is imported by tests only.
package providertest

import (
	"context"

	"better-compute.io/compute/pkg/api"
)

// Secrets is a provider.SecretResolver over fixed values: secret reference
// → value.
type Secrets map[string]string

// Resolve returns the value of ref; NOT_FOUND (secret ref) when s holds
// none.
func (s Secrets) Resolve(_ context.Context, ref string) (string, error) {
	v, ok := s[ref]
	if !ok {
		return "", api.NotFound("secret", ref)
	}
	return v, nil
}
