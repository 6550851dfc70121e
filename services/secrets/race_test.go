package secrets

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider/memory"
)

// raceRounds is how often each race runs.
const raceRounds = 30

// Racing secrets.delete of a secret against a record that names it
// (pools.create with access.privateKey, accounts.create and update with it
// in its config), through the bus, never has both succeed: either the delete is
// refused (INVALID_STATE) and the record stays with a secret that still
// resolves, or the record is refused (naming the field, the secret's
// NOT_FOUND; a refused update leaves the account as it was) and the
// secret is gone. No error quotes a value.
func TestDeleteRacingAHolderNeverBothSucceed(t *testing.T) {
	h := startHarness(t)
	h.withAccounts(t)
	const tokenValue, keyValue = "race-account-token-2b7e", "race-private-key-9c14"
	token := h.put(t, "acme", api.SecretPutRequest{Name: "token", Value: tokenValue})
	var acct api.Account
	if err := h.call(t, bus.Command("acme", bus.ResourceAccounts, "create"), api.AccountCreateRequest{Provider: memory.ProviderID, Name: "mem",
		Config: map[string]any{"token": token.Ref}}, &acct); err != nil {
		t.Fatalf("accounts.create: %v", err)
	}
	var updated [raceRounds]api.Account // the accounts "account-update" points at the key
	holders := map[string]struct {
		field  string
		create func(t *testing.T, round int, ref string) error
	}{
		"pool": {"access.privateKey", func(t *testing.T, round int, ref string) error {
			return h.call(t, bus.Command("acme", bus.ResourcePools, "create"), api.PoolCreateRequest{Name: fmt.Sprintf("hosts-%d", round),
				Class: api.PoolClassProvider, ProviderAccountID: acct.ID, Agent: api.PoolAgentNone,
				Flavors: []api.Flavor{{Name: "small", OfferID: "small", Image: "ubuntu-24.04"}},
				Access:  &api.PoolAccess{User: "root", PrivateKey: ref}}, nil)
		}},
		"account": {"config.token", func(t *testing.T, round int, ref string) error {
			return h.call(t, bus.Command("acme", bus.ResourceAccounts, "create"), api.AccountCreateRequest{Provider: memory.ProviderID,
				Name: fmt.Sprintf("mem-%d", round), Config: map[string]any{"token": ref}}, nil)
		}},
		"account-update": {"config.token", func(t *testing.T, round int, ref string) error {
			return h.call(t, bus.Command("acme", bus.ResourceAccounts, "update"), api.AccountUpdateRequest{ID: updated[round].ID,
				Version: updated[round].Version, Config: map[string]any{"token": ref}}, nil)
		}},
	}
	for round := range updated {
		if err := h.call(t, bus.Command("acme", bus.ResourceAccounts, "create"), api.AccountCreateRequest{Provider: memory.ProviderID,
			Name: fmt.Sprintf("upd-%d", round), Config: map[string]any{"token": token.Ref}}, &updated[round]); err != nil {
			t.Fatalf("accounts.create: %v", err)
		}
	}
	for name, holder := range holders {
		t.Run(name, func(t *testing.T) {
			deleted, held := 0, 0
			for round := range raceRounds {
				key := h.put(t, "acme", api.SecretPutRequest{Name: fmt.Sprintf("%s-%d", name, round), Value: keyValue})
				var delErr, createErr error
				var wg sync.WaitGroup
				wg.Add(2)
				// by round, the create starts up to 40ms after the delete, or the
				// delete up to 96ms after the create
				lag := time.Duration(round%15-10) * 4 * time.Millisecond
				if lag > 0 {
					lag *= 6
				}
				go func() {
					defer wg.Done()
					time.Sleep(lag)
					delErr = h.call(t, cmd("acme", "delete"), api.IDRequest{ID: key.ID}, nil)
				}()
				go func() { defer wg.Done(); time.Sleep(-lag); createErr = holder.create(t, round, key.Ref) }()
				wg.Wait()
				switch {
				case delErr == nil && createErr == nil:
					t.Fatalf("round %d: both the delete and the %s create succeeded: the %s names a deleted secret", round, name, name)
				case delErr == nil:
					deleted++
					wantError(t, createErr, api.CodeNotFound, holder.field, tokenValue, keyValue)
					_, err := h.resolve(t, "acme", key.Ref)
					wantError(t, err, api.CodeNotFound, "", tokenValue, keyValue)
				case createErr == nil:
					held++
					wantError(t, delErr, api.CodeInvalidState, "", tokenValue, keyValue)
					if v, err := h.resolve(t, "acme", key.Ref); err != nil || v != keyValue {
						t.Fatalf("round %d: the %s's secret does not resolve: %v", round, name, err)
					}
				default: // both refused: the delete saw the record the create then took back
					wantError(t, delErr, api.CodeInvalidState, "", tokenValue, keyValue)
					wantError(t, createErr, api.CodeNotFound, holder.field, tokenValue, keyValue)
				}
				if name == "account-update" && createErr != nil {
					var a api.Account
					if err := h.call(t, bus.Command("acme", bus.ResourceAccounts, "get"), api.IDRequest{ID: updated[round].ID}, &a); err != nil ||
						a.Version != updated[round].Version || a.Config["token"] != token.Ref {
						t.Fatalf("round %d: a refused update stayed: version %d, err %v", round, a.Version, err)
					}
				}
			}
			t.Logf("%s: %d rounds, delete won %d, the %s won %d", name, raceRounds, deleted, name, held)
		})
	}
}

// A delete's mark (record.DeletingAt) refuses new holders while it is
// younger than deleteLease, yet the secret still resolves for existing
// ones; a mark older than that (a delete that crashed) stops refusing, and
// the next delete replaces it and, refused, takes it back.
func TestDeleteMarkRefusesUntilItLapses(t *testing.T) {
	h := startHarness(t)
	h.withAccounts(t)
	const value = "mark-token-value-44d2"
	s := h.put(t, "acme", api.SecretPutRequest{Name: "token", Value: value})
	table := bus.NewTable[record](h.env.Stores.Secrets, "secret")
	markAt := func(at time.Time) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, _, err := table.Mutate(ctx, "acme", s.ID, func(r *record) error { r.DeletingAt = &at; return nil }); err != nil {
			t.Fatal(err)
		}
	}

	markAt(time.Now().UTC())
	wantError(t, h.createAccount(t, "acme", s.Ref), api.CodeNotFound, "config.token", value)
	if v, err := h.resolve(t, "acme", s.Ref); err != nil || v != value {
		t.Fatalf("a marked secret does not resolve: %v", err)
	}

	markAt(time.Now().UTC().Add(-deleteLease))
	if err := h.createAccount(t, "acme", s.Ref); err != nil {
		t.Fatalf("a lapsed mark still refuses: %v", err)
	}
	wantError(t, h.call(t, cmd("acme", "delete"), api.IDRequest{ID: s.ID}, nil), api.CodeInvalidState, "", value)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if rec, _, err := table.Get(ctx, "acme", s.ID); err != nil || rec.DeletingAt != nil {
		t.Fatalf("after a refused delete: err %v, mark %v; want the mark taken back", err, rec.DeletingAt)
	}
}
