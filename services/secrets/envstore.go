package secrets

import (
	"context"
	"os"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// envStore serves env://NAME from the service's own environment. The
// broker lets only the tenants of its StoreConfig reach it: the platform's
// environment is not the tenants'.
type envStore struct{}

// EnvSecretPrefix marks environment variables meant as credentials: other
// COMPUTE_* variables (the service's configuration) never resolve.
const EnvSecretPrefix = "COMPUTE_SECRET_"

// Resolve answers the variable's value. Errors: ACCESS_DENIED for the
// service's own configuration (COMPUTE_* but not EnvSecretPrefix); NOT_FOUND
// for an unset or empty variable.
func (envStore) Resolve(_ context.Context, _ string, ref api.SecretRef) (string, error) {
	if strings.HasPrefix(ref.Name, "COMPUTE_") && !strings.HasPrefix(ref.Name, EnvSecretPrefix) {
		// The service's own configuration (seal key, NATS password) is not a
		// credential for providers, whatever the tenant.
		return "", api.Errorf(api.CodeAccessDenied, "env://%s is the service's own configuration; name provider credentials %s…",
			ref.Name, EnvSecretPrefix)
	}
	v := os.Getenv(ref.Name)
	if v == "" {
		return "", api.NotFound("environment variable", ref.Name)
	}
	return v, nil
}
