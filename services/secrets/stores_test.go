package secrets

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/memory"
	"better-compute.io/compute/services/accounts"
	hetzner "better-compute.io/compute/services/provider-hetzner"
)

// withAccounts serves the accounts service, provider-hetzner and the
// memory provider (each manifest has one required secret field, token) on
// h's bus. Creating a Hetzner account asks the provider only for its
// manifest: no API is called; the memory provider also answers offers
// (pools.create), resolving its token through this secrets service.
func (h *harness) withAccounts(t *testing.T) {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t))
	provNC := h.env.Connect(t)
	for _, def := range []*provider.Defined{hetzner.Definition(), memory.Definition(memory.NewCloud())} {
		prov, err := provider.Serve(provNC, def, provider.ServeOptions{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = prov.Stop() })
	}
	if err := provNC.Flush(); err != nil {
		t.Fatal(err)
	}
	acc, err := accounts.Start(h.env.NC, h.env.Stores, accounts.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = acc.Stop() })
}

// createAccount creates a hetzner-cloud account for tenant with
// config {"token": ref}.
func (h *harness) createAccount(t *testing.T, tenant, ref string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bus.Call(ctx, h.env.NC, bus.Command(tenant, bus.ResourceAccounts, "create"),
		api.AccountCreateRequest{Provider: hetzner.ProviderID, Name: "a", Config: map[string]any{"token": ref}}, nil)
}

// With the default configuration only secret:// resolves: env:// and
// vault:// references are refused when an account names them
// (INVALID_INPUT at the field) and at resolve (UNSUPPORTED).
func TestDefaultStoreServesSecretOnly(t *testing.T) {
	t.Setenv(envVarName, "env-value-91c2")
	h := startHarness(t)
	h.withAccounts(t)
	s := h.put(t, "root", api.SecretPutRequest{Name: "tok", Value: "resolve-value-5d1e"})
	if err := h.createAccount(t, "root", s.Ref); err != nil {
		t.Fatalf("account with a secret:// reference: %v", err)
	}
	for _, ref := range []string{"env://" + envVarName, "vault://kv/team/hetzner#token"} {
		t.Run(ref, func(t *testing.T) {
			ce := wantError(t, h.createAccount(t, "root", ref), api.CodeInvalidInput, "config.token", "env-value-91c2")
			if ce.Details.Scheme == "" {
				t.Errorf("details %v name no scheme", ce.Details)
			}
			_, err := h.resolve(t, "root", ref)
			wantError(t, err, api.CodeUnsupported, "ref", "env-value-91c2")
		})
	}
}

// The check endpoint answers INVALID_INPUT for a scheme without a store:
// the reference in the request cannot be used on this deployment.
func TestCheckRefusesUnconfiguredScheme(t *testing.T) {
	h := startHarness(t)
	err := h.call(t, bus.SecretsCheck, api.SecretResolveRequest{TenantID: "root", Ref: "env://" + envVarName}, nil)
	wantError(t, err, api.CodeInvalidInput, "ref")
}

// A configured list replaces the default: env:// and vault:// resolve (for
// the tenants their configuration lists) only where configured, and
// secret:// only where listed too.
func TestConfiguredStores(t *testing.T) {
	t.Setenv(envVarName, "env-value-91c2")
	_, srv := startFakeVault(t)
	vaultRef := "vault://kv/team/hetzner#token"
	values := []string{"env-value-91c2", vaultValue, vaultTokenValue}

	t.Run("secret and env, today's rule", func(t *testing.T) {
		h := startHarness(t, envStores)
		h.withAccounts(t)
		if err := h.createAccount(t, "root", "env://"+envVarName); err != nil {
			t.Fatalf("root's account with env://: %v", err)
		}
		if v, err := h.resolve(t, "root", "env://"+envVarName); err != nil || v != "env-value-91c2" {
			t.Fatalf("resolve env:// for root: err %v, value matches %v", err, v == "env-value-91c2")
		}
		wantError(t, h.createAccount(t, "acme", "env://"+envVarName), api.CodeAccessDenied, "config.token", values...)
		_, err := h.resolve(t, "acme", "env://"+envVarName)
		wantError(t, err, api.CodeAccessDenied, "", values...)
		wantError(t, h.createAccount(t, "root", vaultRef), api.CodeInvalidInput, "config.token", values...)
	})

	t.Run("vault only", func(t *testing.T) {
		store := newTestVaultStore(t, VaultConfig{Address: srv.URL, Token: vaultTokenValue})
		h := startHarness(t, func(o *Options) { o.Stores, o.Vault = []StoreConfig{{Scheme: api.SchemeVault}}, store })
		h.withAccounts(t)
		if err := h.createAccount(t, "root", vaultRef); err != nil {
			t.Fatalf("root's account with vault://: %v", err)
		}
		if v, err := h.resolve(t, "root", vaultRef); err != nil || v != vaultValue {
			t.Fatalf("resolve vault:// for root: err %v, value matches %v", err, v == vaultValue)
		}
		wantError(t, h.createAccount(t, "root", "env://"+envVarName), api.CodeInvalidInput, "config.token", values...)
		_, err := h.resolve(t, "root", "secret://root/"+api.NewID(api.PrefixSecret))
		wantError(t, err, api.CodeUnsupported, "ref", values...)
		err = h.call(t, cmd("root", "put"), api.SecretPutRequest{Name: "tok", Value: "unstored-value-77"}, nil)
		wantError(t, err, api.CodeUnsupported, "", "unstored-value-77")
	})
}

func TestParseStores(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   []StoreConfig
		err    string
	}{
		{"none: the default", nil, DefaultStores, ""},
		{"secret", []string{"secret"}, []StoreConfig{{Scheme: "secret"}}, ""},
		{"today's stores", []string{"secret", "env", "vault"}, []StoreConfig{{Scheme: "secret"}, {Scheme: "env"}, {Scheme: "vault"}}, ""},
		{"env for two tenants", []string{"env:root,ops"}, []StoreConfig{{Scheme: "env", Tenants: []string{"root", "ops"}}}, ""},
		{"vault for one tenant", []string{"secret", "vault:ops"}, []StoreConfig{{Scheme: "secret"}, {Scheme: "vault", Tenants: []string{"ops"}}}, ""},
		{"unknown scheme", []string{"secret", "file"}, nil, `store "file": unknown scheme`},
		{"upper case scheme", []string{"ENV"}, nil, `store "ENV": unknown scheme`},
		{"empty value", []string{""}, nil, `store "": unknown scheme`},
		{"listed twice", []string{"env", "env:ops"}, nil, `store "env": env is listed twice`},
		{"tenants on secret", []string{"secret:root"}, nil, `store "secret": takes no tenant list`},
		{"empty tenant list", []string{"env:"}, nil, `store "env": tenant "" is not a valid tenant id`},
		{"empty tenant in the list", []string{"vault:root,"}, nil, `store "vault": tenant "" is not a valid tenant id`},
		{"invalid tenant", []string{"env:Root"}, nil, `store "env": tenant "Root" is not a valid tenant id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStores(tc.values)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("ParseStores(%q) = %v, %v; want error %q", tc.values, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseStores(%q) = %v, %v; want %v", tc.values, got, err, tc.want)
			}
		})
	}
}

func TestStoreConfigString(t *testing.T) {
	for c, want := range map[*StoreConfig]string{
		{Scheme: "secret"}: "secret",
		{Scheme: "env"}:    "env:root",
		{Scheme: "vault", Tenants: []string{"a", "b"}}: "vault:a,b",
	} {
		if got := c.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", *c, got, want)
		}
	}
}
