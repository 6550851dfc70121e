package secrets

import (
	"reflect"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider/memory"
)

// A pool holds the secret its access.privateKey names as an account holds
// those of its config: through the bus (secrets, accounts, the memory
// provider), secrets.delete refuses the pool's key with INVALID_STATE
// naming the pool in details.pools (and the account's token naming the
// account in details.accounts) while they exist, and deletes the key once
// pools.delete removed the pool. No error quotes a value.
func TestDeleteRefusedWhileAPoolHoldsIt(t *testing.T) {
	h := startHarness(t)
	h.withAccounts(t)
	const tokenValue, keyValue = "pool-account-token-61a0", "pool-private-key-7f3c"
	token := h.put(t, "acme", api.SecretPutRequest{Name: "token", Value: tokenValue})
	key := h.put(t, "acme", api.SecretPutRequest{Name: "ssh", Value: keyValue})
	var acct api.Account
	if err := h.call(t, bus.Command("acme", bus.ResourceAccounts, "create"), api.AccountCreateRequest{Provider: memory.ProviderID, Name: "mem",
		Config: map[string]any{"token": token.Ref}}, &acct); err != nil {
		t.Fatalf("accounts.create: %v", err)
	}
	var pool api.Pool
	if err := h.call(t, bus.Command("acme", bus.ResourcePools, "create"), api.PoolCreateRequest{Name: "hosts", Class: api.PoolClassProvider,
		ProviderAccountID: acct.ID, Agent: api.PoolAgentNone, Flavors: []api.Flavor{{Name: "small", OfferID: "small", Image: "ubuntu-24.04"}},
		Access: &api.PoolAccess{User: "root", PrivateKey: key.Ref}}, &pool); err != nil {
		t.Fatalf("pools.create: %v", err)
	}

	ce := wantError(t, h.call(t, cmd("acme", "delete"), api.IDRequest{ID: key.ID}, nil), api.CodeInvalidState, "", tokenValue, keyValue)
	if !reflect.DeepEqual(ce.Details.Pools, []string{pool.ID}) || len(ce.Details.Accounts) != 0 {
		t.Fatalf("deleting the pool's key: details %+v (%s), want pools [%s] and no account", ce.Details, ce.Message, pool.ID)
	}
	ce = wantError(t, h.call(t, cmd("acme", "delete"), api.IDRequest{ID: token.ID}, nil), api.CodeInvalidState, "", tokenValue, keyValue)
	if !reflect.DeepEqual(ce.Details.Accounts, []string{acct.ID}) || len(ce.Details.Pools) != 0 {
		t.Fatalf("deleting the account's token: details %+v (%s), want accounts [%s] and no pool", ce.Details, ce.Message, acct.ID)
	}
	if v, err := h.resolve(t, "acme", key.Ref); err != nil || v != keyValue {
		t.Fatalf("a refused delete changed the key: resolve err %v, value matches %v", err, v == keyValue)
	}

	if err := h.call(t, bus.Command("acme", bus.ResourcePools, "delete"), api.IDRequest{ID: pool.ID}, nil); err != nil {
		t.Fatalf("pools.delete: %v", err)
	}
	if err := h.call(t, cmd("acme", "delete"), api.IDRequest{ID: key.ID}, nil); err != nil {
		t.Fatalf("deleting the key of a deleted pool: %v", err)
	}
	_, err := h.resolve(t, "acme", key.Ref)
	wantError(t, err, api.CodeNotFound, "", tokenValue, keyValue)
}
