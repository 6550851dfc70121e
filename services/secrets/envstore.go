package secrets

import (
	"context"
	"os"
	"strings"

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
// EnvSecretPrefix marks environment variables meant as credentials: other
// COMPUTE_* variables (the service's configuration) never resolve.
const EnvSecretPrefix = "COMPUTE_SECRET_"

func (s envStore) Resolve(_ context.Context, tenant string, ref api.SecretRef) (string, error) {
	if !s.tenants[tenant] {
		return "", api.Errorf(api.CodeAccessDenied, "tenant %q may not read env:// references", tenant)
	}
	if strings.HasPrefix(ref.Name, "COMPUTE_") && !strings.HasPrefix(ref.Name, EnvSecretPrefix) {
		// The service's own configuration (seal key, NATS password) is not a
		// credential for providers, whatever the tenant.
		return "", api.Errorf(api.CodeAccessDenied, "env://%s is the service's own configuration; name provider credentials %s…", ref.Name, EnvSecretPrefix)
	}
	v := os.Getenv(ref.Name)
	if v == "" {
		return "", api.NotFound("environment variable", ref.Name)
	}
	return v, nil
}
