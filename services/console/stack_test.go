package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/accounts"
	"better-compute.io/compute/services/console"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
	"better-compute.io/compute/services/reconciler"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/secrets/seal"
)

// natsConf is the deployment's nats-server configuration: one user per
// service and per tenant (acme, globex), so a console session is held to
// its tenant by nats-server itself.
const natsConf = "../../deploy/nats.conf"

// users are the users of natsConf, by the variable holding each password.
var users = map[string]string{
	"admin": "COMPUTE_ADMIN_PASSWORD", "secrets": "COMPUTE_SECRETS_PASSWORD", "accounts": "COMPUTE_ACCOUNTS_PASSWORD",
	"reconciler": "COMPUTE_RECONCILER_PASSWORD", "provider-hetzner": "COMPUTE_HETZNER_PASSWORD",
	"provider-proxmox": "COMPUTE_PROXMOX_PASSWORD", "acme": "COMPUTE_TENANT_ACME_PASSWORD", "globex": "COMPUTE_TENANT_GLOBEX_PASSWORD",
}

// fleet is nats-server from natsConf with secrets, accounts, reconciler
// and provider-hetzner (on the Hetzner emulator) each connected as its
// own user, and a console in front of it.
type fleet struct {
	url       string
	passwords map[string]string
	logs      *bustest.LogBuffer
	emu       *emulator.Server
	console   *console.Server
}

// startFleet starts a fleet; hooks are the reconciler's test seams.
func startFleet(t testing.TB, hooks reconciler.Hooks) *fleet {
	t.Helper()
	f := &fleet{passwords: map[string]string{}, logs: &bustest.LogBuffer{}}
	for user, env := range users {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		f.passwords[user] = hex.EncodeToString(b)
		t.Setenv(env, f.passwords[user])
	}
	opts, err := server.ProcessConfigFile(natsConf)
	if err != nil {
		t.Fatalf("load %s: %v", natsConf, err)
	}
	opts.Host, opts.Port, opts.StoreDir = "127.0.0.1", server.RANDOM_PORT, t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	f.url = srv.ClientURL()
	log := zerolog.New(f.logs).Level(zerolog.DebugLevel)
	if f.emu, err = emulator.Start(emulator.Options{ActionDuration: 50 * time.Millisecond}, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.emu.Close() })

	kr, err := seal.NewKeyring(seal.Key{ID: "k1", Bytes: []byte(strings.Repeat("k", seal.KeySize))})
	if err != nil {
		t.Fatal(err)
	}
	nc := f.serviceConn(t, "secrets")
	sec, err := secrets.Start(nc, openStores(t, nc), secrets.Options{Keyring: kr, Stores: []secrets.StoreConfig{{Scheme: api.SchemeSecret}}, Logger: log})
	stopAtCleanup(t, "secrets", sec, err)
	nc = f.serviceConn(t, "provider-hetzner")
	def := hetzner.Definition(hetzner.WithEndpoint(f.emu.URL()), hetzner.WithPollInterval(10*time.Millisecond))
	prov, err := provider.Serve(nc, def, provider.ServeOptions{Logger: log})
	stopAtCleanup(t, "provider-hetzner", prov, err)
	nc = f.serviceConn(t, "accounts")
	acc, err := accounts.Start(nc, openStores(t, nc), accounts.Options{Logger: log})
	stopAtCleanup(t, "accounts", acc, err)
	nc = f.serviceConn(t, "reconciler")
	rec, err := reconciler.Start(nc, openStores(t, nc), reconciler.Options{Logger: log, PollInterval: 20 * time.Millisecond,
		CallTimeout: 5 * time.Second, ResyncInterval: -1, Hooks: hooks,
		Retry: reconciler.RetryPolicy{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		t.Fatalf("start reconciler: %v", err)
	}
	t.Cleanup(rec.Stop)

	if f.console, err = console.Start(console.Options{Dial: console.DialNATS(f.url), Logger: log}, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.console.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs:\n%s", f.logs.String())
		}
	})
	return f
}

func stopAtCleanup(t testing.TB, name string, svc *bus.Service, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
}

// serviceConn connects as a service user with its inbox prefix.
func (f *fleet) serviceConn(t testing.TB, user string) *nats.Conn {
	t.Helper()
	nc, err := bus.Connect(bus.ConnectOptions{URL: f.url, Name: user, User: user, Password: f.passwords[user],
		InboxPrefix: bus.InboxRoot + "_svc_" + user})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	return nc
}

func openStores(t testing.TB, nc *nats.Conn) *bus.Stores {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		t.Fatalf("open stores as %s: %v", nc.Opts.Name, err)
	}
	return st
}

// tenant drives the system as one tenant, the way the CLI does.
type tenant struct {
	t  testing.TB
	id string
	nc *nats.Conn
}

func (f *fleet) tenant(t testing.TB, id string) *tenant {
	t.Helper()
	nc, err := bus.Connect(bus.ConnectOptions{URL: f.url, Name: id, User: id, Password: f.passwords[id], InboxPrefix: bus.InboxRoot + "_" + id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return &tenant{t: t, id: id, nc: nc}
}

func (c *tenant) must(resource, verb string, in, out any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := bus.Call(ctx, c.nc, bus.Command(c.id, resource, verb), in, out); err != nil {
		c.t.Fatalf("%s %s.%s: %v", c.id, resource, verb, err)
	}
}

// secretValues are the values hetznerPool stores: no page may show one.
var secretValues = []string{"web-token-9f1c2e", "batch-token-9f1c2e"}

// hetznerPool stores a token (name-token-9f1c2e), registers a hetzner-cloud
// account and makes pool name with flavor small (cx23, ubuntu-24.04).
func (c *tenant) hetznerPool(name string) api.Pool {
	c.t.Helper()
	var sec api.Secret
	c.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: name, Value: name + "-token-9f1c2e"}, &sec)
	var acct api.Account
	c.must(bus.ResourceAccounts, "create", api.AccountCreateRequest{Provider: "hetzner-cloud", Name: name,
		Config: map[string]any{"token": sec.Ref}}, &acct)
	var pool api.Pool
	c.must(bus.ResourcePools, "create", api.PoolCreateRequest{Name: name, Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
		ProviderAccountID: acct.ID, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}}}, &pool)
	return pool
}

// instance creates an instance called name in pool.
func (c *tenant) instance(pool api.Pool, name string) api.Instance {
	c.t.Helper()
	var inst api.Instance
	c.must(bus.ResourceInstances, "create", api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small", Name: name}, &inst)
	return inst
}

// waitPhase waits (30 s at most) until instance id is in phase.
func (c *tenant) waitPhase(id string, phase api.Phase) api.Instance {
	c.t.Helper()
	var inst api.Instance
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c.must(bus.ResourceInstances, "get", api.IDRequest{ID: id}, &inst)
		if inst.Status.Phase == phase {
			return inst
		}
	}
	c.t.Fatalf("instance %s never reached %s; last status %+v", id, phase, inst.Status)
	return inst
}

// price is the price per hour of an account's offer, as accounts.offers
// answers it.
func (c *tenant) price(accountID, offerID string) float64 {
	c.t.Helper()
	var offers api.List[api.Offer]
	c.must(bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: accountID}, &offers)
	for _, o := range offers.Items {
		if o.ID == offerID && o.PricePerHour != nil {
			return *o.PricePerHour
		}
	}
	c.t.Fatalf("account %s has no priced offer %s: %+v", accountID, offerID, offers.Items)
	return 0
}
