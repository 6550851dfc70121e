package secrets

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

const envVarName = "COMPUTE_SECRET_TEST_ENV_CREDENTIAL"

// envStores is today's env:// rule made explicit: secret:// and env:// for
// root.
func envStores(o *Options) {
	o.Stores = []StoreConfig{{Scheme: api.SchemeSecret}, {Scheme: api.SchemeEnv}}
}

func TestResolveAndCheck(t *testing.T) {
	t.Setenv(envVarName, "env-value-91c2")
	h := startHarness(t, envStores)
	s := h.put(t, "acme", api.SecretPutRequest{Name: "tok", Value: "resolve-value-5d1e"})

	value, err := h.resolve(t, "acme", s.Ref)
	if err != nil || value != "resolve-value-5d1e" {
		t.Fatalf("resolve own secret: err %v, value matches %v", err, value == "resolve-value-5d1e")
	}
	value, err = h.resolve(t, "root", "env://"+envVarName)
	if err != nil || value != "env-value-91c2" {
		t.Fatalf("resolve env:// for root: err %v, value matches %v", err, value == "env-value-91c2")
	}

	missing := "secret://acme/" + api.NewID(api.PrefixSecret)
	for _, tc := range []struct {
		name, tenant, ref string
		code              api.Code
		path              string
	}{
		{"own secret", "acme", s.Ref, "", ""},
		{"root env", "root", "env://" + envVarName, "", ""},
		{"cross tenant", "other", s.Ref, api.CodeAccessDenied, ""},
		{"env for a tenant", "acme", "env://" + envVarName, api.CodeAccessDenied, ""},
		{"env for a tenant, unset variable", "acme", "env://SECRETS_TEST_UNSET", api.CodeAccessDenied, ""},
		{"env of the service's own configuration", "root", "env://COMPUTE_SEAL_KEY", api.CodeAccessDenied, ""},
		{"env unset", "root", "env://COMPUTE_SECRET_TEST_UNSET", api.CodeNotFound, ""},
		// Only variables with the configured prefix resolve (issue 20):
		// not the Vault token of the service's own environment.
		{"env without the prefix", "root", "env://VAULT_TOKEN", api.CodeAccessDenied, ""},
		{"env without the prefix, unset", "root", "env://SECRETS_TEST_UNSET", api.CodeAccessDenied, ""},
		{"missing secret", "acme", missing, api.CodeNotFound, ""},
		{"malformed secret ref", "acme", "secret://acme/not-an-id", api.CodeInvalidInput, "ref"},
		{"unknown scheme", "acme", "http://example", api.CodeInvalidInput, "ref"},
		{"plain value", "acme", "resolve-value-5d1e", api.CodeInvalidInput, "ref"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.resolve(t, tc.tenant, tc.ref)
			checkOutcome(t, "resolve", err, tc.code, tc.path)

			var raw json.RawMessage
			err = h.call(t, bus.SecretsCheck, api.SecretResolveRequest{TenantID: tc.tenant, Ref: tc.ref}, &raw)
			checkOutcome(t, "check", err, tc.code, tc.path)
			if err == nil && string(raw) != "{}" {
				t.Fatalf("check answered %d bytes, want exactly {}", len(raw))
			}
		})
	}
}

func checkOutcome(t *testing.T, verb string, err error, code api.Code, path string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("%s: %v, want success", verb, err)
		}
		return
	}
	wantError(t, err, code, path, "resolve-value-5d1e", "env-value-91c2")
}

func TestEnvStoreTenants(t *testing.T) {
	t.Setenv(envVarName, "env-value-91c2")
	for _, tc := range []struct {
		name    string
		tenants []string
		allowed map[string]bool
	}{
		{"root by default", nil, map[string]bool{"acme": false, "root": true}},
		{"listed tenant only", []string{"acme"}, map[string]bool{"acme": true, "root": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, func(o *Options) { o.Stores = []StoreConfig{{Scheme: api.SchemeEnv, Tenants: tc.tenants}} })
			for tenant, allowed := range tc.allowed {
				_, err := h.resolve(t, tenant, "env://"+envVarName)
				if allowed {
					checkOutcome(t, "resolve for "+tenant, err, "", "")
				} else {
					checkOutcome(t, "resolve for "+tenant, err, api.CodeAccessDenied, "")
				}
			}
		})
	}
}

// A sealed value copied under another key (another id, another tenant) does
// not open: the reference is the additional authenticated data.
func TestSealedValueBoundToItsKey(t *testing.T) {
	h := startHarness(t)
	s := h.put(t, "acme", api.SecretPutRequest{Name: "tok", Value: "bound-value-0a0b"})
	ctx := context.Background()
	kv := h.env.Stores.Secrets
	e, err := kv.Get(ctx, "acme."+s.ID)
	if err != nil {
		t.Fatal(err)
	}
	otherID := api.NewID(api.PrefixSecret)
	for _, move := range []struct{ tenant, id string }{{"acme", otherID}, {"other", s.ID}} {
		if _, err := kv.Put(ctx, move.tenant+"."+move.id, e.Value()); err != nil {
			t.Fatal(err)
		}
		_, err := h.resolve(t, move.tenant, secretRef(move.tenant, move.id))
		ce := wantError(t, err, api.CodeInternal, "", "bound-value-0a0b")
		if want := "cannot be opened"; !strings.Contains(ce.Message, want) {
			t.Fatalf("moved record: %s, want %q", ce.Message, want)
		}
	}
	if v, err := h.resolve(t, "acme", s.Ref); err != nil || v != "bound-value-0a0b" {
		t.Fatalf("original no longer resolves: %v", err)
	}
}
