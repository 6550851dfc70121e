package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/natsauth"
)

// The operator's `compute tenants` round trip, and the CLI's answer to a
// verb outside a credential's scopes: ACCESS_DENIED naming the scope, at
// once, where nats-server refused the publish.
func TestTenantsCLIAndScopes(t *testing.T) {
	s, dataDir := startTestStack(t, &bustest.LogBuffer{})
	admin := &cli{t: t, url: s.nats.ClientURL(), creds: s.adminCreds(dataDir)}
	var tenant api.Tenant
	admin.must(&tenant, "", "tenants", "create", "initech", "--connections", "10", "--quota-instances", "5")
	if tenant.ID != "initech" || tenant.Limits.Connections != 10 || tenant.Quotas.Instances != 5 || tenant.State != api.TenantActive {
		t.Fatalf("created: %+v", tenant)
	}
	_, err := admin.run("", "tenants", "create", "bad_id")
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "id" {
		t.Fatalf("a bad id: %v", err)
	}
	file := filepath.Join(t.TempDir(), "reader.creds")
	var cred api.TenantCredential
	admin.must(&cred, "", "tenants", "credentials", "initech", "--name", "reader", "--scope", "compute:instances:read", "--out", file)
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 || len(cred.Scopes) != 1 {
		t.Fatalf("creds file: %v %v; credential %+v", fi, err, cred)
	}
	out, err := admin.run("", "tenants", "credentials", "initech", "--name", "ci", "--scope", "compute:instances:read",
		"--out", filepath.Join(t.TempDir(), "ci.creds"), "-o", "table")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 2 ||
		strings.Join(strings.Fields(lines[0]), " ") != "NAME SCOPES CREATED" || !strings.HasPrefix(lines[1], "ci ") ||
		strings.Contains(out, "SUA") || strings.Contains(out, "NATS USER") {
		t.Fatalf("tenants credentials -o table: %v\n%s", err, out)
	}
	reader := &cli{t: t, url: s.nats.ClientURL(), tenant: "initech", creds: file}
	var list api.List[api.Instance]
	reader.must(&list, "", "instances", "list")
	_, err = reader.run("value\n", "secrets", "put", "x")
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeAccessDenied || ce.Details.Scope != string(api.ScopeSecretsManage) {
		t.Fatalf("secrets put without the scope: %v, want ACCESS_DENIED naming %s", err, api.ScopeSecretsManage)
	}
	var all api.List[api.Tenant]
	admin.must(&all, "", "tenants", "list")
	if len(all.Items) != 2 || all.Items[0].ID != "demo" || all.Items[1].ID != "initech" {
		t.Fatalf("tenants: %+v", all.Items)
	}
	admin.must(&tenant, "", "tenants", "revoke", "initech", "--credential", cred.ID)
	if tenant.Credentials[0].RevokedAt == nil {
		t.Fatalf("after revoke: %+v", tenant.Credentials)
	}
	if _, err := reader.run("", "instances", "list"); err == nil {
		t.Fatal("a revoked credential still connects")
	}
	// A tenant's own credential cannot reach the operator's subjects.
	demo := &cli{t: t, url: s.nats.ClientURL(), tenant: "demo", creds: s.demoCreds}
	if _, err := demo.run("", "tenants", "list"); !api.IsCode(err, api.CodeAccessDenied) {
		t.Fatalf("tenants list as a tenant: %v, want ACCESS_DENIED", err)
	}
}

// A second `compute up` on the same data directory keeps the operator and
// its keys, and the demo tenant's credential still works.
func TestUpReusesItsKeys(t *testing.T) {
	dir := t.TempDir()
	start := func() *stack {
		s, err := startStack(upOptions{dataDir: dir, natsHost: "127.0.0.1", hetznerAddr: "127.0.0.1:0", proxmoxAddr: "127.0.0.1:0",
			services: serviceConfig{log: zerolog.Nop(), resyncInterval: -1}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	first, err := natsauth.Load(filepath.Join(dir, upAuthDir))
	if err != nil {
		t.Fatal(err)
	}
	c := &cli{t: t, url: s.nats.ClientURL(), tenant: "demo", creds: s.demoCreds}
	c.must(nil, "token\n", "secrets", "put", "kept")
	s.Close()

	s = start()
	t.Cleanup(s.Close)
	second, err := natsauth.Load(filepath.Join(dir, upAuthDir))
	if err != nil {
		t.Fatal(err)
	}
	if first.Operator != second.Operator || first.Services != second.Services {
		t.Fatalf("the second up made a new operator or SERVICES account")
	}
	c.url = s.nats.ClientURL()
	var list api.List[api.Secret]
	c.must(&list, "", "secrets", "list")
	if len(list.Items) != 1 || list.Items[0].Name != "kept" {
		t.Fatalf("demo's secrets after the restart: %+v", list.Items)
	}
}
