package client_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// hetznerPool registers a token, an account and a pool (flavor small:
// cx23, ubuntu-24.04) for c's tenant.
func hetznerPool(t *testing.T, c *client.Client) api.Pool {
	t.Helper()
	ctx := t.Context()
	secret, err := c.Secrets.Put(ctx, api.SecretPutRequest{Name: "hcloud", Value: "token"})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := c.Accounts.Create(ctx, api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "prod",
		Config: map[string]any{"token": secret.Ref}})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := c.Pools.Create(ctx, api.PoolCreateRequest{Name: "web", Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
		ProviderAccountID: acct.ID, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}}})
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// Wait ends with INVALID_STATE naming the problem when the instance fails
// at its generation (Hetzner refuses an unknown image for good), with
// ctx.Err() when the context ends first, and sees every get in progress.
func TestWaitEnds(t *testing.T) {
	c := connect("wait-ends")
	defer c.Close()
	pool := hetznerPool(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	bad, err := c.Instances.Create(ctx, api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small", Name: "bad-1", Image: "no-such-image"})
	if err != nil {
		t.Fatal(err)
	}
	gets := 0
	_, err = c.Instances.Wait(ctx, bad.ID, client.Running, func(*api.Instance, error) { gets++ })
	if !api.IsCode(err, api.CodeInvalidState) || !strings.Contains(err.Error(), "PROVIDER_ERROR") || gets == 0 {
		t.Fatalf("wait for a failing instance: %v after %d gets, want INVALID_STATE naming the provider error", err, gets)
	}

	ok, err := c.Instances.Create(ctx, api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small", Name: "ok-1"})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := c.Instances.Wait(ctx, ok.ID, client.ConditionGoal(api.ConditionReady, api.ConditionTrue), nil)
	if err != nil || ready.Status.Phase != api.PhaseRunning {
		t.Fatalf("wait for Ready True: %v, phase %s; want a running instance", err, ready.Status.Phase)
	}
	short, stop := context.WithCancel(ctx)
	stop()
	if _, err := c.Instances.Wait(short, ok.ID, client.Stopped, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with an ended context: %v, want context.Canceled", err)
	}
}

// A malformed tenant is refused before anything is sent; a name nobody
// has is NOT_FOUND naming it.
func TestClientRefusals(t *testing.T) {
	if _, err := client.Connect(client.Options{URLs: []string{natsURL}, Tenant: "Not A Tenant"}); !api.IsCode(err, api.CodeInvalidInput) ||
		api.AsComputeError(err).Path() != "tenant" {
		t.Fatalf("connect as a malformed tenant: %v, want INVALID_INPUT at tenant", err)
	}
	c := connect("refusals")
	defer c.Close()
	_, err := c.Pools.Resolve(t.Context(), "nowhere")
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeNotFound || ce.Details.ID != "nowhere" {
		t.Fatalf("resolve of an unknown name: %v, want NOT_FOUND naming it", err)
	}
	id := api.NewID(api.PrefixPool)
	if got, err := c.Pools.Resolve(t.Context(), id); got != id || err != nil {
		t.Fatalf("resolve of an id: %q %v, want the id itself", got, err)
	}
}

// Do sends a verb by name: the same reply as the typed method.
func TestDo(t *testing.T) {
	c := connect("do")
	defer c.Close()
	put, err := c.Secrets.Put(t.Context(), api.SecretPutRequest{Name: "x", Value: "v"})
	if err != nil {
		t.Fatal(err)
	}
	var page api.List[api.Secret]
	if err := c.Do(t.Context(), bus.ResourceSecrets, "list", api.ListRequest{}, &page); err != nil ||
		len(page.Items) != 1 || page.Items[0].ID != put.ID {
		t.Fatalf("secrets.list by Do: %+v %v, want the one secret %s", page, err, put.ID)
	}
	if err := c.Do(t.Context(), bus.ResourceSecrets, "nonesuch", api.Empty{}, nil); !api.IsCode(err, api.CodeUnavailable) {
		t.Fatalf("a verb nobody serves: %v, want UNAVAILABLE", err)
	}
}

// Every public verb (api.Verbs) has its typed method: resource R, verb v
// is Client.R.V (instances.power: Instances.Power), taking a context.
func TestEveryVerbHasAMethod(t *testing.T) {
	c := reflect.ValueOf(client.New(nil, "acme", 0)).Elem()
	title := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	for _, v := range api.Verbs {
		res := c.FieldByName(title(v.Resource))
		if !res.IsValid() {
			t.Errorf("%s.%s: the Client has no field %s", v.Resource, v.Verb, title(v.Resource))
			continue
		}
		m := res.MethodByName(title(v.Verb))
		if !m.IsValid() {
			t.Errorf("%s.%s: %s has no method %s", v.Resource, v.Verb, res.Type(), title(v.Verb))
			continue
		}
		if mt := m.Type(); mt.NumIn() == 0 || mt.In(0) != reflect.TypeFor[context.Context]() {
			t.Errorf("%s.%s: %s.%s does not take a context first: %s", v.Resource, v.Verb, res.Type(), title(v.Verb), mt)
		}
	}
}
