package secrets

import (
	"errors"
	"fmt"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// DefaultOperatorTenant is the one tenant allowed to resolve env:// or
// vault:// references when their StoreConfig lists none.
const DefaultOperatorTenant = "root"

// StoreConfig configures one store of Options.Stores: which scheme resolves
// and, for the stores reading with the platform's own credentials (env://,
// vault://), which tenants may name references of it.
type StoreConfig struct {
	// Scheme served: api.SchemeSecret, api.SchemeEnv or api.SchemeVault.
	Scheme string
	// Tenants may resolve env:// or vault:// references: nil means
	// [DefaultOperatorTenant]; a non-nil list must name at least one. Must
	// be nil for secret://, which each tenant reads for its own secrets only.
	Tenants []string
}

// DefaultStores is the configuration when none is given: the sealed local
// store, secret:// only.
var DefaultStores = []StoreConfig{{Scheme: api.SchemeSecret}}

// String is the configuration as ParseStores reads it: "secret",
// "env:root", "vault:root,ops".
func (c StoreConfig) String() string {
	if c.Scheme == api.SchemeSecret {
		return c.Scheme
	}
	return c.Scheme + ":" + strings.Join(c.tenantList(), ",")
}

func (c StoreConfig) tenantList() []string {
	if c.Tenants == nil {
		return []string{DefaultOperatorTenant}
	}
	return c.Tenants
}

// ParseStores reads store configurations, one per value: "secret", "env"
// or "vault", optionally followed by ":" and the comma-separated tenants
// allowed to use env:// or vault:// ("env:root,ops"). No values means
// DefaultStores; a list replaces the default (list secret to keep it).
// Errors (plain, naming the value): an unknown scheme, a tenant list on
// secret, an empty or invalid tenant, a scheme listed twice.
func ParseStores(values []string) ([]StoreConfig, error) {
	if len(values) == 0 {
		return DefaultStores, nil
	}
	out := make([]StoreConfig, 0, len(values))
	for _, v := range values {
		scheme, list, hasList := strings.Cut(v, ":")
		c := StoreConfig{Scheme: scheme}
		if hasList {
			c.Tenants = strings.Split(list, ",")
		}
		out = append(out, c)
	}
	if err := checkStores(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkStores validates configurations: every scheme known and listed once,
// tenant lists valid. Errors are plain and name the store.
func checkStores(stores []StoreConfig) error {
	seen := map[string]bool{}
	for _, c := range stores {
		switch {
		case c.Scheme != api.SchemeSecret && c.Scheme != api.SchemeEnv && c.Scheme != api.SchemeVault:
			return fmt.Errorf("store %q: unknown scheme (want secret, env or vault)", c.Scheme)
		case seen[c.Scheme]:
			return fmt.Errorf("store %q: %s is listed twice", c.Scheme, c.Scheme)
		case c.Scheme == api.SchemeSecret && c.Tenants != nil:
			return errors.New(`store "secret": takes no tenant list (each tenant reads its own secrets)`)
		case c.Tenants != nil && len(c.Tenants) == 0:
			return fmt.Errorf("store %q: the tenant list is empty (leave the store out instead)", c.Scheme)
		}
		seen[c.Scheme] = true
		for _, t := range c.Tenants {
			if !api.ValidTenant(t) {
				return fmt.Errorf("store %q: tenant %q is not a valid tenant id", c.Scheme, t)
			}
		}
	}
	return nil
}
