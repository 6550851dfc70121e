package authtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// confPath is the configuration under test.
const confPath = "../nats.conf"

// Hetzner API tokens of the two tenants: the emulator accepts only these,
// so a call succeeds only with the token resolved from the right secret.
const (
	acmeToken   = "hcloud-acme-token-4f7a1c9e"
	globexToken = "hcloud-globex-token-8d2b6e0f"
)

// stack is a nats-server started from deploy/nats.conf in operator mode
// (its auth include made by natsauth.Init, as `compute nats-init` does),
// with every service connected as its own user of the SERVICES account,
// the tenants service, tenants acme and globex created through its API,
// the Hetzner emulator behind the provider, and an admin connection.
type stack struct {
	url      string
	storeDir string
	authDir  string
	dir      string
	// creds are the files of tenant credentials minted by adminCreds,
	// by tenant.
	creds map[string]string
	logs  *bustest.LogBuffer
	admin *nats.Conn
	emu   *emulator.Server
	srv   *server.Server
	ssh   *sshemu.Fleet // the emulator's servers' SSH endpoints
}

func startStack(t testing.TB) *stack {
	t.Helper()
	dir := t.TempDir()
	s := &stack{dir: dir, storeDir: filepath.Join(dir, "jetstream"), authDir: filepath.Join(dir, "auth"), creds: map[string]string{},
		logs: &bustest.LogBuffer{}}
	auth, err := natsauth.Init(s.authDir, natsauth.InitOptions{ResolverDir: filepath.Join(dir, "jwt")})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(confPath)
	if err != nil {
		t.Fatal(err)
	}
	// beside its include, auth/nats-auth.conf, as in deploy/
	if err := os.WriteFile(filepath.Join(dir, "nats.conf"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats.conf"))
	if err != nil {
		t.Fatalf("load %s: %v", confPath, err)
	}
	opts.Host, opts.Port, opts.StoreDir = "127.0.0.1", server.RANDOM_PORT, s.storeDir
	opts.NoLog, opts.NoSigs = true, true
	s.srv, err = server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats-server from %s: %v", confPath, err)
	}
	s.srv.Start()
	t.Cleanup(func() { s.srv.Shutdown(); s.srv.WaitForShutdown() })
	if !s.srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	s.url = s.srv.ClientURL()
	s.admin = s.serviceConn(t, natsauth.UserAdmin, "")
	log := zerolog.New(s.logs).Level(zerolog.DebugLevel)

	s.ssh = sshemu.NewFleet(log)
	t.Cleanup(s.ssh.Close)
	s.emu, err = emulator.Start(emulator.Options{Tokens: []string{acmeToken, globexToken}, ActionDuration: 20 * time.Millisecond, Logger: log,
		SSH: s.ssh}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.emu.Close() })

	kr, err := seal.NewKeyring(seal.Key{ID: "k1", Bytes: []byte(strings.Repeat("k", seal.KeySize))})
	if err != nil {
		t.Fatal(err)
	}
	nc := s.serviceConn(t, "secrets", "_INBOX_svc_secrets")
	// env:// configured explicitly (for root, as before stores became
	// configuration), so the tests show a tenant refused the platform's
	// environment by the store's tenant list.
	stores := []secrets.StoreConfig{{Scheme: api.SchemeSecret}, {Scheme: api.SchemeEnv}}
	sec, err := secrets.Start(nc, s.openStores(t, nc), secrets.Options{Keyring: kr, Stores: stores, Logger: log})
	started(t, "secrets", sec, err)
	nc = s.serviceConn(t, "provider-hetzner", "_INBOX_svc_provider-hetzner")
	def := hetzner.Definition(hetzner.WithEndpoint(s.emu.URL()), hetzner.WithPollInterval(10*time.Millisecond))
	prov, err := provider.Serve(nc, def, provider.ServeOptions{Logger: log})
	started(t, "provider-hetzner", prov, err)
	nc = s.serviceConn(t, "accounts", "_INBOX_svc_accounts")
	acc, err := accounts.Start(nc, s.openStores(t, nc), accounts.Options{Logger: log})
	started(t, "accounts", acc, err)
	nc = s.serviceConn(t, "reconciler", "_INBOX_svc_reconciler")
	rec, err := reconciler.Start(nc, s.openStores(t, nc), reconciler.Options{Logger: log, PollInterval: 20 * time.Millisecond,
		CallTimeout: 5 * time.Second, ResyncInterval: -1, Retry: reconciler.RetryPolicy{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		t.Fatalf("start reconciler: %v", err)
	}
	t.Cleanup(rec.Stop)
	s.startTenants(t, auth, log)
	for _, tenant := range []string{"acme", "globex"} {
		s.createTenant(t, api.TenantCreateRequest{ID: tenant})
		s.creds[tenant] = s.mintCreds(t, tenant, "cli", api.ScopeAdmin)
	}
	return s
}

// startTenants starts the tenants service as its own user, pushing account
// JWTs through a user of the SYS account.
func (s *stack) startTenants(t testing.TB, auth *natsauth.Authority, log zerolog.Logger) {
	t.Helper()
	sysCreds, err := auth.SysUser()
	if err != nil {
		t.Fatal(err)
	}
	sysFile := filepath.Join(s.dir, "tenants-sys.creds")
	if err := os.WriteFile(sysFile, sysCreds, 0o600); err != nil {
		t.Fatal(err)
	}
	sys := s.connConn(t, "tenants-sys", sysFile, "")
	nc := s.serviceConn(t, natsauth.UserTenants, "_INBOX_svc_tenants")
	ten, err := tenants.Start(nc, s.openStores(t, nc), tenants.Options{Authority: auth, Sys: sys, Logger: log})
	started(t, "tenants", ten, err)
}

// createTenant creates a tenant through the tenants API as admin.
func (s *stack) createTenant(t testing.TB, req api.TenantCreateRequest) api.Tenant {
	t.Helper()
	var out api.Tenant
	if err := s.adminCall(tenants.Subject("create"), req, &out); err != nil {
		t.Fatalf("create tenant %s: %v", req.ID, err)
	}
	return out
}

// mintCreds mints a credential of tenant with scopes through the tenants
// API as admin and returns the file holding it.
func (s *stack) mintCreds(t testing.TB, tenant, name string, scopes ...api.Scope) string {
	t.Helper()
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = string(sc)
	}
	var out api.TenantCredentialsReply
	if err := s.adminCall(tenants.Subject("credentials"), api.TenantCredentialsRequest{ID: tenant, Name: name, Scopes: names}, &out); err != nil {
		t.Fatalf("credentials of %s: %v", tenant, err)
	}
	file := filepath.Join(s.dir, tenant+"-"+name+".creds")
	if err := os.WriteFile(file, []byte(out.Creds), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// adminCall sends a request as the admin user.
func (s *stack) adminCall(subject string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bus.Call(ctx, s.admin, subject, in, out)
}

// started fails t when a service did not start and stops it at cleanup.
func started(t testing.TB, name string, svc *bus.Service, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
}

// serviceConn connects as user of the SERVICES account (its credentials
// from natsauth.Init) with the inbox prefix a `compute serve` process of
// that user uses ("" keeps _INBOX), closed at cleanup.
func (s *stack) serviceConn(t testing.TB, user, inbox string) *nats.Conn {
	t.Helper()
	return s.connConn(t, user, s.serviceCreds(user), inbox)
}

// serviceCreds is the credentials file of user of the SERVICES account.
func (s *stack) serviceCreds(user string) string {
	return filepath.Join(s.authDir, natsauth.CredsDir, user+".creds")
}

// connConn connects with the credentials file creds, closed at cleanup.
func (s *stack) connConn(t testing.TB, name, creds, inbox string) *nats.Conn {
	t.Helper()
	nc, err := bus.Connect(bus.ConnectOptions{URL: s.url, Name: name, CredsFile: creds, InboxPrefix: inbox})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	return nc
}

// openStores opens the buckets and streams as a service does at start-up,
// with that service's permissions.
func (s *stack) openStores(t testing.TB, nc *nats.Conn) *bus.Stores {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		t.Fatalf("open stores as %s: %v", nc.Opts.Name, err)
	}
	return st
}

// violations collects the errors the server reports to one connection
// (permission violations, exceeded limits).
type violations struct {
	mu   sync.Mutex
	seen []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	v.seen = append(v.seen, err.Error())
	v.mu.Unlock()
}

// wait fails t unless the server reports an error containing want
// (e.g. `Publish to "compute.v1.b.secrets.list"`) within 30 s.
func (v *violations) wait(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		v.mu.Lock()
		for _, s := range v.seen {
			if strings.Contains(s, want) {
				v.mu.Unlock()
				return
			}
		}
		v.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no permission violation %s reported", want)
		}
	}
}

// client is a connection as one user, recording every reply body and error
// text it receives.
type client struct {
	t       testing.TB
	tenant  string
	nc      *nats.Conn
	denied  *violations
	mu      sync.Mutex
	replies []string
}

// connect connects with the credentials file creds (a tenant's or a
// service user's) as tenant (its subjects' tenant token) with inbox prefix
// inbox, the way the compute CLI does for a tenant (_INBOX_<tenant>).
func (s *stack) connect(t testing.TB, tenant, creds, inbox string) *client {
	t.Helper()
	c, err := s.dial(t, tenant, creds, inbox)
	if err != nil {
		t.Fatalf("connect as %s: %v", tenant, err)
	}
	return c
}

// dial is connect returning the error of a refused connection.
func (s *stack) dial(t testing.TB, tenant, creds, inbox string) (*client, error) {
	t.Helper()
	c := &client{t: t, tenant: tenant, denied: &violations{}}
	var err error
	c.nc, err = nats.Connect(s.url, nats.Name(tenant), nats.UserCredentials(creds), nats.NoReconnect(),
		nats.CustomInboxPrefix(inbox), nats.ErrorHandler(c.denied.handler), nats.PermissionErrOnSubscribe(true))
	if err != nil {
		return nil, err
	}
	t.Cleanup(c.nc.Close)
	return c, nil
}

// tenantClient connects with tenant's credential of scope compute:admin
// and the tenant's inbox prefix.
func (s *stack) tenantClient(t testing.TB, tenant string) *client {
	return s.connect(t, tenant, s.creds[tenant], "_INBOX_"+tenant)
}

// request sends in on subject (with a 10 s deadline, or timeout when
// shorter) and decodes the reply into out (may be nil).
func (c *client) request(subject string, in, out any, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var raw json.RawMessage
	err := bus.Call(ctx, c.nc, subject, in, &raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.replies = append(c.replies, err.Error())
		return err
	}
	c.replies = append(c.replies, string(raw))
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// call sends a command of the client's tenant.
func (c *client) call(resource, verb string, in, out any) error {
	return c.request(bus.Command(c.tenant, resource, verb), in, out, 10*time.Second)
}

// must sends a command that must succeed.
func (c *client) must(resource, verb string, in, out any) {
	c.t.Helper()
	if err := c.call(resource, verb, in, out); err != nil {
		c.t.Fatalf("%s %s.%s: %v", c.tenant, resource, verb, err)
	}
}

// wantCode fails unless err is a ComputeError of code with details.path path.
func wantCode(t *testing.T, what string, err error, code api.Code, path string) {
	t.Helper()
	ce := api.AsComputeError(err)
	if ce == nil || ce.Code != code || ce.Path() != path {
		t.Fatalf("%s: %v; want %s (path %q)", what, err, code, path)
	}
}

// eventually polls f every 20 ms for up to 30 s.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !f(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// tenantWorld is what a tenant's walkthrough made.
type tenantWorld struct {
	secret   api.Secret
	account  api.Account
	pool     api.Pool
	instance api.Instance
	events   *nats.Subscription
}

// walkthrough runs the README walkthrough as c's tenant up to a running
// instance: store the token, register a hetzner-cloud account, list its
// offers, create a pool and an instance, and see the instance's running
// event on the tenant's own event subject.
func walkthrough(t *testing.T, c *client, token string) *tenantWorld {
	t.Helper()
	w := &tenantWorld{}
	c.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "hcloud", Value: token, IdempotencyKey: "hcloud-1"}, &w.secret)
	c.must(bus.ResourceAccounts, "create", api.AccountCreateRequest{Provider: hetzner.ProviderID, Name: "prod",
		Config: map[string]any{"token": w.secret.Ref}}, &w.account)
	var offers api.List[api.Offer]
	c.must(bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: w.account.ID, Query: api.OfferQuery{MinVcpu: 2}}, &offers)
	if len(offers.Items) == 0 {
		t.Fatalf("%s: no offers", c.tenant)
	}
	c.must(bus.ResourcePools, "create", api.PoolCreateRequest{Name: "web", Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
		ProviderAccountID: w.account.ID, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}}}, &w.pool)
	var err error
	if w.events, err = c.nc.SubscribeSync(bus.EventsOf(c.tenant)); err != nil {
		t.Fatal(err)
	}
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c.must(bus.ResourceInstances, "create", api.InstanceCreateRequest{PoolID: w.pool.ID, Flavor: "small", Name: c.tenant + "-web-1", IdempotencyKey: "web-1"}, &w.instance)
	eventually(t, c.tenant+" instance running", func() bool {
		c.must(bus.ResourceInstances, "get", api.IDRequest{ID: w.instance.ID}, &w.instance)
		return w.instance.Status.Phase == api.PhaseRunning
	})
	want := bus.Event(c.tenant, bus.ResourceInstances, w.instance.ID, "running")
	for {
		msg, err := w.events.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("%s: no running event on its own event subject: %v", c.tenant, err)
		}
		if msg.Subject == want {
			break
		}
	}
	return w
}

// finish deletes the tenant's instance and waits until it is gone.
func finish(t *testing.T, c *client, w *tenantWorld) {
	t.Helper()
	c.must(bus.ResourceInstances, "delete", api.IDRequest{ID: w.instance.ID}, nil)
	eventually(t, c.tenant+" instance deleted", func() bool {
		return api.IsCode(c.call(bus.ResourceInstances, "get", api.IDRequest{ID: w.instance.ID}, nil), api.CodeNotFound)
	})
}
