package secrets

import (
	"context"
	"os"
	"slices"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// envStore serves env://NAME from the service's own environment, for the
// variables whose names start with one of prefixes only: the rest of the
// environment (VAULT_TOKEN, HOME, the service's configuration) is not a
// credential for providers. The broker lets only the tenants of its
// StoreConfig reach it: the platform's environment is not the tenants'.
type envStore struct{ prefixes []string }

// EnvSecretPrefix marks environment variables meant as credentials, the
// default of Options.EnvPrefixes: other COMPUTE_* variables (the service's
// configuration) never resolve, whatever the prefixes.
const EnvSecretPrefix = "COMPUTE_SECRET_"

// Resolve answers the variable's value. Errors: ACCESS_DENIED for the
// service's own configuration (COMPUTE_* but not EnvSecretPrefix) and for a
// name without one of the prefixes; NOT_FOUND for an unset or empty
// variable.
func (e envStore) Resolve(_ context.Context, _ string, ref api.SecretRef) (string, error) {
	if strings.HasPrefix(ref.Name, "COMPUTE_") && !strings.HasPrefix(ref.Name, EnvSecretPrefix) {
		// The service's own configuration (seal key, NATS password) is not a
		// credential for providers, whatever the tenant.
		return "", api.Errorf(api.CodeAccessDenied, "env://%s is the service's own configuration; name provider credentials %s…",
			ref.Name, EnvSecretPrefix)
	}
	if !slices.ContainsFunc(e.prefixes, func(p string) bool { return strings.HasPrefix(ref.Name, p) }) {
		return "", api.Errorf(api.CodeAccessDenied,
			"env://%s is not a credential variable: only names starting with %s resolve (--env-secret-prefix)",
			ref.Name, strings.Join(e.prefixes, " or "))
	}
	v := os.Getenv(ref.Name)
	if v == "" {
		return "", api.NotFound("environment variable", ref.Name)
	}
	return v, nil
}
