// Package stacktest starts the control plane for tests the way the
// deployment runs it: a nats-server from deploy/nats.conf in operator mode
// (its auth include written by natsauth.Init, as `compute nats-init`
// does), every service connected as its own user of the SERVICES account
// with its own creds file, the tenants service pushing account JWTs
// through a SYS user, tenants created through the tenants API with a
// credential each, the provider on the Hetzner emulator, and an admin
// connection. deploy/authtest and services/console test against it.
package stacktest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/natsauth"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/sshemu"
	"better-compute.io/compute/services/accounts"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
	"better-compute.io/compute/services/reconciler"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/secrets/seal"
	"better-compute.io/compute/services/tenants"
)

// DefaultTenants are the tenants Start creates when Options.Tenants is
// empty.
var DefaultTenants = []string{"acme", "globex"}

// Options are what differs between the stacks of two test packages.
type Options struct {
	// Tenants are created through the tenants API, each with a credential
	// of scope compute:admin in Stack.Creds; empty means DefaultTenants.
	Tenants []string
	// Tokens are the Hetzner API tokens the emulator accepts; empty
	// accepts any non-empty token.
	Tokens []string
	// ActionDuration is how long an emulated server action runs; zero
	// means 20 ms.
	ActionDuration time.Duration
	// SSH gives the emulator's servers SSH endpoints (Stack.SSH).
	SSH bool
	// SecretStores are the secrets service's stores; empty means the
	// secret:// store alone.
	SecretStores []secrets.StoreConfig
	// Hooks are the reconciler's test seams.
	Hooks reconciler.Hooks
}

// Stack is a running control plane; everything stops at the test's
// cleanup.
type Stack struct {
	// URL is the nats-server's client URL.
	URL string
	// Dir is the stack's temporary directory (nats.conf, creds files).
	Dir string
	// StoreDir is nats-server's JetStream store.
	StoreDir string
	// AuthDir is where natsauth.Init wrote the auth include, keys and the
	// creds of the SERVICES users.
	AuthDir string
	// Authority is the operator made by natsauth.Init.
	Authority *natsauth.Authority
	// Creds are the files of the tenants' compute:admin credentials, by
	// tenant.
	Creds map[string]string
	// Logs hold every service's log lines; they are printed when the test
	// fails.
	Logs *bustest.LogBuffer
	// Log is the services' logger, writing to Logs.
	Log zerolog.Logger
	// Admin is a connection as the admin user of the SERVICES account.
	Admin *nats.Conn
	// Emu is the Hetzner emulator behind the provider.
	Emu *emulator.Server
	// Server is the nats-server.
	Server *server.Server
	// SSH are the emulator's servers' SSH endpoints (nil unless
	// Options.SSH).
	SSH *sshemu.Fleet
}

// ConfPath is deploy/nats.conf, the configuration the stack's nats-server
// runs.
func ConfPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "nats.conf")
}

// Start starts a stack for t.
func Start(t testing.TB, o Options) *Stack {
	t.Helper()
	if len(o.Tenants) == 0 {
		o.Tenants = DefaultTenants
	}
	if o.ActionDuration == 0 {
		o.ActionDuration = 20 * time.Millisecond
	}
	if len(o.SecretStores) == 0 {
		o.SecretStores = []secrets.StoreConfig{{Scheme: api.SchemeSecret}}
	}
	dir := t.TempDir()
	s := &Stack{Dir: dir, StoreDir: filepath.Join(dir, "jetstream"), AuthDir: filepath.Join(dir, "auth"),
		Creds: map[string]string{}, Logs: &bustest.LogBuffer{}}
	s.Log = zerolog.New(s.Logs).Level(zerolog.DebugLevel)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs:\n%s", s.Logs.String())
		}
	})
	s.startServer(t)
	s.Admin = s.ServiceConn(t, natsauth.UserAdmin, "")

	var err error
	eo := emulator.Options{Tokens: o.Tokens, ActionDuration: o.ActionDuration, Logger: s.Log}
	if o.SSH {
		s.SSH = sshemu.NewFleet(s.Log)
		t.Cleanup(s.SSH.Close)
		eo.SSH = s.SSH
	}
	if s.Emu, err = emulator.Start(eo, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Emu.Close() })

	kr, err := seal.NewKeyring(seal.Key{ID: "k1", Bytes: []byte(strings.Repeat("k", seal.KeySize))})
	if err != nil {
		t.Fatal(err)
	}
	nc := s.ServiceConn(t, "secrets", "_INBOX_svc_secrets")
	sec, err := secrets.Start(nc, s.OpenStores(t, nc), secrets.Options{Keyring: kr, Stores: o.SecretStores, Logger: s.Log})
	started(t, "secrets", sec, err)
	nc = s.ServiceConn(t, "provider-hetzner", "_INBOX_svc_provider-hetzner")
	def := hetzner.Definition(hetzner.WithEndpoint(s.Emu.URL()), hetzner.WithPollInterval(10*time.Millisecond))
	prov, err := provider.Serve(nc, def, provider.ServeOptions{Logger: s.Log})
	started(t, "provider-hetzner", prov, err)
	nc = s.ServiceConn(t, "accounts", "_INBOX_svc_accounts")
	acc, err := accounts.Start(nc, s.OpenStores(t, nc), accounts.Options{Logger: s.Log})
	started(t, "accounts", acc, err)
	nc = s.ServiceConn(t, "reconciler", "_INBOX_svc_reconciler")
	rec, err := reconciler.Start(nc, s.OpenStores(t, nc), reconciler.Options{Logger: s.Log, PollInterval: 20 * time.Millisecond,
		CallTimeout: 5 * time.Second, ResyncInterval: -1, Hooks: o.Hooks,
		Retry: reconciler.RetryPolicy{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		t.Fatalf("start reconciler: %v", err)
	}
	t.Cleanup(rec.Stop)
	s.startTenants(t)
	for _, tenant := range o.Tenants {
		s.CreateTenant(t, api.TenantCreateRequest{ID: tenant})
		s.Creds[tenant] = s.MintCreds(t, tenant, "cli", api.ScopeAdmin)
	}
	return s
}

// startServer writes the auth include with natsauth.Init, copies
// deploy/nats.conf beside it (as in deploy/) and starts nats-server from
// it on a random port.
func (s *Stack) startServer(t testing.TB) {
	t.Helper()
	var err error
	s.Authority, err = natsauth.Init(s.AuthDir, natsauth.InitOptions{ResolverDir: filepath.Join(s.Dir, "jwt")})
	if err != nil {
		t.Fatal(err)
	}
	confPath := ConfPath()
	conf, err := os.ReadFile(confPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "nats.conf"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(s.Dir, "nats.conf"))
	if err != nil {
		t.Fatalf("load %s: %v", confPath, err)
	}
	opts.Host, opts.Port, opts.StoreDir = "127.0.0.1", server.RANDOM_PORT, s.StoreDir
	opts.NoLog, opts.NoSigs = true, true
	s.Server, err = server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats-server from %s: %v", confPath, err)
	}
	s.Server.Start()
	t.Cleanup(func() { s.Server.Shutdown(); s.Server.WaitForShutdown() })
	if !s.Server.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	s.URL = s.Server.ClientURL()
}

// startTenants starts the tenants service as its own user, pushing account
// JWTs through a user of the SYS account.
func (s *Stack) startTenants(t testing.TB) {
	t.Helper()
	sysCreds, err := s.Authority.SysUser()
	if err != nil {
		t.Fatal(err)
	}
	sysFile := filepath.Join(s.Dir, "tenants-sys.creds")
	if err := os.WriteFile(sysFile, sysCreds, 0o600); err != nil {
		t.Fatal(err)
	}
	sys := s.Connect(t, "tenants-sys", sysFile, "")
	nc := s.ServiceConn(t, natsauth.UserTenants, "_INBOX_svc_tenants")
	ten, err := tenants.Start(nc, s.OpenStores(t, nc), tenants.Options{Authority: s.Authority, Sys: sys, Logger: s.Log})
	started(t, "tenants", ten, err)
}

// CreateTenant creates a tenant through the tenants API as admin.
func (s *Stack) CreateTenant(t testing.TB, req api.TenantCreateRequest) api.Tenant {
	t.Helper()
	var out api.Tenant
	if err := s.AdminCall(tenants.Subject("create"), req, &out); err != nil {
		t.Fatalf("create tenant %s: %v", req.ID, err)
	}
	return out
}

// MintCreds mints a credential called name of tenant with scopes through
// the tenants API as admin and returns the file holding it.
func (s *Stack) MintCreds(t testing.TB, tenant, name string, scopes ...api.Scope) string {
	t.Helper()
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = string(sc)
	}
	var out api.TenantCredentialsReply
	req := api.TenantCredentialsRequest{ID: tenant, Name: name, Scopes: names}
	if err := s.AdminCall(tenants.Subject("credentials"), req, &out); err != nil {
		t.Fatalf("credentials of %s: %v", tenant, err)
	}
	file := filepath.Join(s.Dir, tenant+"-"+name+".creds")
	if err := os.WriteFile(file, []byte(out.Creds), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// CredsText is the text of tenant's credential in Creds, as a tenant
// pastes or uploads it.
func (s *Stack) CredsText(t testing.TB, tenant string) string {
	t.Helper()
	b, err := os.ReadFile(s.Creds[tenant])
	if err != nil {
		t.Fatalf("credential of %s: %v", tenant, err)
	}
	return string(b)
}

// AdminCall sends a request as the admin user (10 s at most).
func (s *Stack) AdminCall(subject string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bus.Call(ctx, s.Admin, subject, in, out)
}

// ServiceConn connects as user of the SERVICES account (its credentials
// from natsauth.Init) with the inbox prefix a `compute serve` process of
// that user uses ("" keeps _INBOX), closed at cleanup.
func (s *Stack) ServiceConn(t testing.TB, user, inbox string) *nats.Conn {
	t.Helper()
	return s.Connect(t, user, s.ServiceCreds(user), inbox)
}

// ServiceCreds is the credentials file of user of the SERVICES account.
func (s *Stack) ServiceCreds(user string) string {
	return filepath.Join(s.AuthDir, natsauth.CredsDir, user+".creds")
}

// Connect connects as name with the credentials file creds and inbox
// prefix inbox ("" keeps _INBOX), closed at cleanup.
func (s *Stack) Connect(t testing.TB, name, creds, inbox string) *nats.Conn {
	t.Helper()
	nc, err := bus.Connect(bus.ConnectOptions{URL: s.URL, Name: name, CredsFile: creds, InboxPrefix: inbox})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	return nc
}

// TenantConn connects with tenant's credential in Creds and the tenant's
// inbox prefix (_INBOX_<tenant>, as the compute CLI does), closed at
// cleanup.
func (s *Stack) TenantConn(t testing.TB, tenant string) *nats.Conn {
	t.Helper()
	return s.Connect(t, tenant, s.Creds[tenant], bus.InboxRoot+"_"+tenant)
}

// OpenStores opens the buckets and streams as a service does at start-up,
// with the permissions of nc's user.
func (s *Stack) OpenStores(t testing.TB, nc *nats.Conn) *bus.Stores {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		t.Fatalf("open stores as %s: %v", nc.Opts.Name, err)
	}
	return st
}

// started fails t when a service did not start and stops it at cleanup.
func started(t testing.TB, name string, svc *bus.Service, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
}
