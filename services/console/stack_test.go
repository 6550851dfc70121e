package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/deploy/stacktest"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/console"
	"better-compute.io/compute/services/reconciler"
)

// fleet is the operator-mode stack of deploy/stacktest (nats-server from
// deploy/nats.conf, every service as its own user, tenants acme and globex
// each a NATS account with a credential) with a console in front of it,
// so a console session is held to its tenant by nats-server itself.
type fleet struct {
	*stacktest.Stack
	console *console.Server
}

// startFleet starts a fleet; hooks are the reconciler's test seams.
func startFleet(t testing.TB, hooks reconciler.Hooks) *fleet {
	t.Helper()
	f := &fleet{Stack: stacktest.Start(t, stacktest.Options{ActionDuration: 50 * time.Millisecond, Hooks: hooks})}
	var err error
	if f.console, err = console.Start(console.Options{Dial: console.DialNATS(f.URL), Logger: f.Log}, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.console.Close)
	return f
}

// tenant drives the system as one tenant, the way the CLI does.
type tenant struct {
	t  testing.TB
	id string
	nc *nats.Conn
}

// tenant connects with id's credential and inbox prefix.
func (f *fleet) tenant(t testing.TB, id string) *tenant {
	t.Helper()
	return &tenant{t: t, id: id, nc: f.TenantConn(t, id)}
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
