package accounts_test

import (
	"slices"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Account and pool names are unique per tenant: a second create (or an
// account rename) to a taken name is ALREADY_EXISTS at name naming the
// holder; another tenant may use the name.
func TestNamesAreUniquePerTenant(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "")
	_, err := call[api.Account](t, e.NC, tenant, bus.ResourceAccounts, "create", map[string]any{
		"provider": fakeProviderID, "name": "main", "config": map[string]any{"token": secretT1}})
	wantErr(t, err, api.CodeAlreadyExists, "name")
	if err.Details.ID != a.ID {
		t.Fatalf("refusal names %q, want the holder %s", err.Details.ID, a.ID)
	}
	if _, err := call[api.Account](t, e.NC, other, bus.ResourceAccounts, "create", map[string]any{
		"provider": fakeProviderID, "name": "main", "config": map[string]any{"token": secretT2}}); err != nil {
		t.Fatalf("the other tenant's account main: %v", err)
	}
	b := createAccount(t, e, "second", "")
	_, err = call[api.Account](t, e.NC, tenant, bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: b.ID, Version: 1, Name: "main"})
	wantErr(t, err, api.CodeAlreadyExists, "name")
	// Renaming to its own name is no conflict.
	must[api.Account](t, e.NC, bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: a.ID, Version: 1, Name: "main"})

	pool := api.PoolCreateRequest{Name: "web", Class: api.PoolClassProvider, ProviderAccountID: a.ID, Agent: api.PoolAgentNone,
		Flavors: []api.Flavor{{Name: "small", OfferID: "cx22-fsn1"}}}
	p := must[api.Pool](t, e.NC, bus.ResourcePools, "create", pool)
	_, err = call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "create", pool)
	wantErr(t, err, api.CodeAlreadyExists, "name")
	if err.Details.ID != p.ID {
		t.Fatalf("pool refusal names %q, want the holder %s", err.Details.ID, p.ID)
	}
	pool.Name = ""
	must[api.Pool](t, e.NC, bus.ResourcePools, "create", pool)
	must[api.Pool](t, e.NC, bus.ResourcePools, "create", pool) // unnamed pools never collide
}

// Accounts of one name made before names were unique keep working.
func TestExistingDuplicateAccountNamesKeepWorking(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "dup", "")
	dup := a
	dup.ID = api.NewID(api.PrefixAccount)
	if _, err := e.Stores.AccountTable().Create(t.Context(), tenant, dup.ID, dup); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, dup.ID} {
		got := must[api.Account](t, e.NC, bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: id, Version: 1, Config: map[string]any{"token": secretT1}})
		if got.Name != "dup" || got.Version != 2 {
			t.Fatalf("update of duplicate %s: %+v", id, got)
		}
		must[api.Deleted](t, e.NC, bus.ResourceAccounts, "delete", api.IDRequest{ID: id})
	}
}

// providers.list describes the configured providers that serve (the fake
// one; "absent" has no service), providers.describe one of them: its
// fields with types and defaults; an unknown id is NOT_FOUND.
func TestProvidersListAndDescribe(t *testing.T) {
	e := start(t, 0)
	list := must[api.List[api.ProviderInfo]](t, e.NC, bus.ResourceProviders, "list", api.ListRequest{})
	if len(list.Items) != 1 || list.Items[0].ID != fakeProviderID || list.Items[0].Version != "1.0.0" {
		t.Fatalf("providers.list: %+v, want only %s 1.0.0", list.Items, fakeProviderID)
	}
	info := must[api.ProviderInfo](t, e.NC, bus.ResourceProviders, "describe", api.IDRequest{ID: fakeProviderID})
	var names []string
	for _, f := range info.Fields {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"token", "location", "nested"}) || info.Fields[0].Type != "secret" || info.Fields[1].Default != "fsn1" {
		t.Fatalf("describe fields: %+v", info.Fields)
	}
	_, err := call[api.ProviderInfo](t, e.NC, tenant, bus.ResourceProviders, "describe", api.IDRequest{ID: "absent"})
	if err == nil || err.Code != api.CodeNotFound || err.Details.ID != "absent" {
		t.Fatalf("describe absent: %v, want NOT_FOUND naming it", err)
	}
	_, err = call[api.ProviderInfo](t, e.NC, tenant, bus.ResourceProviders, "describe", api.IDRequest{ID: "Bad.Id"})
	wantErr(t, err, api.CodeInvalidInput, "id")
}

// An unknown config field is INVALID_CONFIG at its path listing the fields
// that exist at that level.
func TestUnknownConfigFieldListsTheFields(t *testing.T) {
	e := start(t, 0)
	_, err := call[api.Account](t, e.NC, tenant, bus.ResourceAccounts, "create", map[string]any{
		"provider": fakeProviderID, "name": "x", "config": map[string]any{"token": secretT1, "region": "fsn1"}})
	wantErr(t, err, api.CodeInvalidConfig, "config.region")
	if !slices.Equal(err.Details.Allowed, []string{"token", "location", "nested"}) {
		t.Fatalf("allowed %v, want the manifest's fields", err.Details.Allowed)
	}
}
