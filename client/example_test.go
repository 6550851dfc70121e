package client_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

// connect is what an example does first: connect as tenant (natsURL is
// the test stack's server; a program passes its own).
func connect(tenant string) *client.Client {
	c, err := client.Connect(client.Options{URLs: []string{natsURL}, Tenant: tenant})
	if err != nil {
		panic(err)
	}
	return c
}

// A machine from nothing: a credential, an account, a pool, an instance
// waited for until it runs, then deleted.
func Example() {
	c, err := client.Connect(client.Options{URLs: []string{natsURL}, Tenant: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	secret, err := c.Secrets.Put(ctx, api.SecretPutRequest{Name: "hcloud", Value: "my-hetzner-token"})
	if err != nil {
		fmt.Println(err)
		return
	}
	acct, err := c.Accounts.Create(ctx, api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "prod",
		Config: map[string]any{"token": secret.Ref, "location": "fsn1"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	pool, err := c.Pools.Create(ctx, api.PoolCreateRequest{Name: "web", Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
		ProviderAccountID: acct.ID, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	inst, err := c.Instances.Create(ctx, api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small", Name: "web-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	inst, err = c.Instances.Wait(ctx, inst.ID, client.Running, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(inst.Name, inst.Status.Phase, inst.Status.Machine.State)

	if _, err := c.Instances.Delete(ctx, inst.ID); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.Instances.Wait(ctx, inst.ID, client.Deleted, nil); err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.Instances.Get(ctx, inst.ID)
	fmt.Println(api.CodeOf(err))
	// Output:
	// web-1 Running running
	// NOT_FOUND
}

// Errors are *api.ComputeError: a code, a message and details such as the
// offending field.
func ExampleAccountClient_Create_errors() {
	c := connect("example-errors")
	defer c.Close()
	ctx := context.Background()
	_, err := c.Accounts.Create(ctx, api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "bad",
		Config: map[string]any{"token": "plaintext"}})
	ce := api.AsComputeError(err)
	fmt.Println(ce.Code, ce.Path())

	secret, _ := c.Secrets.Put(ctx, api.SecretPutRequest{Name: "t", Value: "v"})
	_, err = c.Accounts.Create(ctx, api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "bad",
		Config: map[string]any{"token": secret.Ref, "zone": "fsn1"}})
	ce = api.AsComputeError(err)
	fmt.Println(ce.Code, ce.Path(), "fields:", strings.Join(ce.Details.Allowed, ", "))
	// Output:
	// INVALID_INPUT config.token
	// INVALID_CONFIG config.zone fields: token, location
}

// Offers of an account, filtered by a query.
func ExampleAccountClient_Offers() {
	c := connect("example-offers")
	defer c.Close()
	ctx := context.Background()
	secret, _ := c.Secrets.Put(ctx, api.SecretPutRequest{Name: "hcloud", Value: "token"})
	acct, err := c.Accounts.Create(ctx, api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "prod",
		Config: map[string]any{"token": secret.Ref}})
	if err != nil {
		fmt.Println(err)
		return
	}
	offers, err := c.Accounts.Offers(ctx, acct.ID, api.OfferQuery{MinVcpu: 16, Kind: api.KindVPS})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range offers {
		if strings.HasPrefix(o.ID, "cax") {
			fmt.Println(o.ID, o.Architecture, o.Vcpu, o.MemoryGiB, o.Region)
		}
	}
	// Output:
	// cax41 arm64 16 32 fsn1
}

// The config fields an account of a provider takes.
func ExampleProviderClient_Describe() {
	c := connect("example-providers")
	defer c.Close()
	info, err := c.Providers.Describe(context.Background(), "hetzner-cloud")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range info.Fields[:2] {
		fmt.Println(f.Name, f.Type, f.Required, f.Default)
	}
	// Output:
	// token secret true <nil>
	// location option false fsn1
}

// A name stands for an id while it is unique in the tenant; an ambiguous
// one is refused with the ids it could mean.
func ExampleInstanceClient_Resolve() {
	c := connect("example-names")
	defer c.Close()
	ctx := context.Background()
	secret, _ := c.Secrets.Put(ctx, api.SecretPutRequest{Name: "hcloud", Value: "token"})
	acct, _ := c.Accounts.Create(ctx, api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "prod",
		Config: map[string]any{"token": secret.Ref}})
	var pools []string
	for _, name := range []string{"blue", "green"} {
		p, err := c.Pools.Create(ctx, api.PoolCreateRequest{Name: name, Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
			ProviderAccountID: acct.ID, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}}})
		if err != nil {
			fmt.Println(err)
			return
		}
		pools = append(pools, p.ID)
	}
	first, _ := c.Instances.Create(ctx, api.InstanceCreateRequest{PoolID: pools[0], Flavor: "small", Name: "web-1", Power: api.PowerOff})
	id, err := c.Instances.Resolve(ctx, "web-1")
	fmt.Println(id == first.ID, err)

	// Names are unique per pool: the same name in the pool is refused...
	_, err = c.Instances.Create(ctx, api.InstanceCreateRequest{PoolID: pools[0], Flavor: "small", Name: "web-1", Power: api.PowerOff})
	fmt.Println(api.CodeOf(err))
	// ...in another pool it is not, and the name no longer resolves.
	second, _ := c.Instances.Create(ctx, api.InstanceCreateRequest{PoolID: pools[1], Flavor: "small", Name: "web-1", Power: api.PowerOff})
	_, err = c.Instances.Resolve(ctx, "web-1")
	ce := api.AsComputeError(err)
	fmt.Println(ce.Code, len(ce.Details.Candidates), ce.Details.Candidates[0] == min(first.ID, second.ID))
	// Output:
	// true <nil>
	// ALREADY_EXISTS
	// INVALID_INPUT 2 true
}

// Follow an instance's events as they happen.
func ExampleInstanceClient_Watch() {
	c := connect("example-watch")
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secret, _ := c.Secrets.Put(ctx, api.SecretPutRequest{Name: "hcloud", Value: "token"})
	acct, _ := c.Accounts.Create(ctx, api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "prod",
		Config: map[string]any{"token": secret.Ref}})
	pool, _ := c.Pools.Create(ctx, api.PoolCreateRequest{Name: "web", Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
		ProviderAccountID: acct.ID, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}}})

	events, err := c.Instances.Watch(ctx, "") // every instance of the tenant, from now on
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.Instances.Create(ctx, api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small", Name: "watched-1"}); err != nil {
		fmt.Println(err)
		return
	}
	for ev := range events {
		fmt.Println(ev.Type)
		if ev.Phase == api.PhaseRunning || ev.Phase == api.PhaseFailed {
			break
		}
	}
	// Output:
	// created
	// provisioning
	// running
}
