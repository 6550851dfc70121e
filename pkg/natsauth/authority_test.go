package natsauth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/natsauth"
)

// A second Init keeps the operator, the keys and the accounts (what `compute
// up` on the same data directory and gen-env.sh rely on), and its server
// include loads in nats-server with both fixed accounts preloaded.
func TestInitIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	o := natsauth.InitOptions{ResolverDir: filepath.Join(dir, "jwt")}
	first, err := natsauth.Init(filepath.Join(dir, "auth"), o)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := os.ReadFile(filepath.Join(dir, "auth", natsauth.IssuerKeyFile))
	second, err := natsauth.Init(filepath.Join(dir, "auth"), o)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "auth", natsauth.IssuerKeyFile))
	if first.Operator != second.Operator || first.Sys != second.Sys || first.Services != second.Services || string(seed) != string(again) {
		t.Fatalf("a second Init changed the authority: %+v then %+v", first, second)
	}
	for file, mode := range map[string]os.FileMode{natsauth.IssuerKeyFile: 0o600, natsauth.OperatorSigningKeyFile: 0o600,
		"creds/secrets.creds": 0o600, "env/tenants.env": 0o600, natsauth.ServerConfFile: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, "auth", file))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, mode %v; want %v", file, err, fi.Mode().Perm(), mode)
		}
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "auth", natsauth.ServerConfFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.TrustedOperators) != 1 || opts.SystemAccount != first.Sys || opts.AccountResolver == nil {
		t.Fatalf("server options: operators %d, system account %q, resolver %v", len(opts.TrustedOperators), opts.SystemAccount, opts.AccountResolver)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "auth", "env", "tenants.env"))
	for _, v := range []string{natsauth.EnvJWT, natsauth.EnvSeed, natsauth.EnvSigningKey, natsauth.EnvIssuerKey} {
		if !strings.Contains(string(env), v+"=") {
			t.Errorf("tenants.env lacks %s", v)
		}
	}
	if _, err := natsauth.LoadKeys(filepath.Join(dir, "auth"), []byte("SUnot-a-seed"), seed); err == nil ||
		strings.Contains(err.Error(), "not-a-seed") {
		t.Fatalf("LoadKeys with a bad seed: %v", err)
	}
}

// A tenant account imports exactly its own verbs and events; a credential
// may publish only the verbs of its scopes, subscribe only to its events
// and its inbox.
func TestTenantAccountAndPermissions(t *testing.T) {
	a, err := natsauth.Init(t.TempDir(), natsauth.InitOptions{ResolverDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	acct, _ := natsauth.NewAccountKey()
	token, err := a.TenantAccount(api.Tenant{ID: "acme", Account: acct, Limits: api.DefaultTenantLimits})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := jwt.DecodeAccountClaims(token)
	if err != nil {
		t.Fatal(err)
	}
	if len(ac.Imports) != len(api.Verbs)+1 {
		t.Fatalf("%d imports, want %d", len(ac.Imports), len(api.Verbs)+1)
	}
	for _, im := range ac.Imports {
		if !strings.HasPrefix(string(im.Subject), "compute.v1.acme.") || im.Account != a.Services {
			t.Errorf("import %s from %s", im.Subject, im.Account)
		}
	}
	if ac.Limits.Conn != 100 || ac.Limits.DiskStorage != 0 {
		t.Fatalf("limits %+v", ac.Limits)
	}
	p := natsauth.TenantPermissions("acme", []api.Scope{api.ScopeInstancesRead})
	want := []string{bus.Command("acme", "instances", "get"), bus.Command("acme", "instances", "list"),
		bus.Command("acme", "instances", "metrics")}
	if strings.Join(p.Pub.Allow, ",") != strings.Join(want, ",") || len(p.Pub.Deny) != 0 {
		t.Fatalf("publish of instances:read: %+v", p.Pub)
	}
	if strings.Join(p.Sub.Allow, ",") != bus.EventsOf("acme")+",_INBOX_acme.>" {
		t.Fatalf("subscribe: %v", p.Sub.Allow)
	}
	if none := natsauth.TenantPermissions("acme", nil); len(none.Pub.Allow) != 0 || strings.Join(none.Pub.Deny, ",") != ">" {
		t.Fatalf("no scope: %+v", none.Pub)
	}
}
