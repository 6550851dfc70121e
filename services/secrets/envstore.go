package secrets

import (
	"context"
	"os"

	"better-compute.io/compute/pkg/api"
)

// envStore serves env://NAME from the service's own environment, only to the
// tenants the operator listed (operator credentials must not leak to
// ordinary tenants).
type envStore struct {
	tenants map[string]bool
}

func (envStore) Scheme() string { return api.SchemeEnv }

// Resolve answers the variable's value. Errors: ACCESS_DENIED for a tenant
// not listed (checked first, so others cannot probe which variables exist);
// NOT_FOUND for an unset or empty variable.
func (s envStore) Resolve(_ context.Context, tenant string, ref api.SecretRef) (string, error) {
	if !s.tenants[tenant] {
		return "", api.Errorf(api.CodeAccessDenied, "tenant %q may not read env:// references", tenant)
	}
	v := os.Getenv(ref.Name)
	if v == "" {
		return "", api.NotFound("environment variable", ref.Name)
	}
	return v, nil
}
