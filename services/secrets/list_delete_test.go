package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

func TestListShowsMetadataOnly(t *testing.T) {
	h := startHarness(t)
	a := h.put(t, "acme", api.SecretPutRequest{Name: "a", Value: "list-value-a"})
	b := h.put(t, "acme", api.SecretPutRequest{Name: "b", Value: "list-value-b"})
	h.put(t, "other", api.SecretPutRequest{Name: "c", Value: "list-value-c"})

	var raw json.RawMessage
	if err := h.call(t, cmd("acme", "list"), api.ListRequest{}, &raw); err != nil {
		t.Fatalf("list: %v", err)
	}
	for _, forbidden := range []string{"list-value-", "ciphertext", "nonce", "keyId"} {
		if bytes.Contains(raw, []byte(forbidden)) {
			t.Fatalf("list reply holds %q", forbidden)
		}
	}
	var list api.List[api.Secret]
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	want := []api.Secret{a, b}
	for i := range list.Items {
		list.Items[i].CreatedAt = list.Items[i].CreatedAt.Round(time.Microsecond)
	}
	for i := range want {
		want[i].CreatedAt = want[i].CreatedAt.Round(time.Microsecond)
	}
	if !reflect.DeepEqual(list.Items, want) || list.NextCursor != "" {
		t.Fatalf("list %+v (next %q), want %+v", list.Items, list.NextCursor, want)
	}

	var page api.List[api.Secret]
	if err := h.call(t, cmd("acme", "list"), api.ListRequest{Limit: 1}, &page); err != nil || len(page.Items) != 1 || page.Items[0].ID != a.ID || page.NextCursor != a.ID {
		t.Fatalf("first page %+v (err %v), want %s with cursor", page, err, a.ID)
	}
	var last api.List[api.Secret]
	if err := h.call(t, cmd("acme", "list"), api.ListRequest{Limit: 1, Cursor: page.NextCursor}, &last); err != nil || len(last.Items) != 1 || last.Items[0].ID != b.ID || last.NextCursor != "" {
		t.Fatalf("second page %+v (err %v), want %s and no cursor", last, err, b.ID)
	}
}

func TestDelete(t *testing.T) {
	h := startHarness(t)
	s := h.put(t, "acme", api.SecretPutRequest{Name: "a", Value: "delete-value"})
	var del api.Deleted
	if err := h.call(t, cmd("acme", "delete"), api.IDRequest{ID: s.ID}, &del); err != nil || del != (api.Deleted{ID: s.ID, Deleted: true}) {
		t.Fatalf("delete: %+v, %v", del, err)
	}
	var list api.List[api.Secret]
	if err := h.call(t, cmd("acme", "list"), api.ListRequest{}, &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("list after delete: %d items (err %v), want none", len(list.Items), err)
	}
	wantError(t, h.call(t, cmd("acme", "delete"), api.IDRequest{ID: s.ID}, nil), api.CodeNotFound, "")
	_, err := h.resolve(t, "acme", s.Ref)
	wantError(t, err, api.CodeNotFound, "")
}

func TestDeleteRefusedWhileAnAccountReferencesIt(t *testing.T) {
	h := startHarness(t)
	s := h.put(t, "acme", api.SecretPutRequest{Name: "a", Value: "referenced-value"})
	ctx := context.Background()
	accounts := h.env.Stores.AccountTable()
	write := func(tenant, id string, config map[string]any) {
		t.Helper()
		if _, err := accounts.Create(ctx, tenant, id, api.Account{ID: id, TenantID: tenant, Provider: "hetzner-cloud", Name: id, Config: config, Version: 1}); err != nil {
			t.Fatal(err)
		}
	}
	unrelated := h.put(t, "acme", api.SecretPutRequest{Name: "b", Value: "other-value"})
	write("acme", "pacct_nested", map[string]any{"endpoint": "https://x", "auth": map[string]any{"tokens": []any{"x", s.Ref}}})
	write("acme", "pacct_top", map[string]any{"token": s.Ref})
	write("acme", "pacct_unrelated", map[string]any{"token": unrelated.Ref})

	ce := wantError(t, h.call(t, cmd("acme", "delete"), api.IDRequest{ID: s.ID}, nil), api.CodeInvalidState, "")
	if got := ce.Details.Accounts; !reflect.DeepEqual(got, []string{"pacct_nested", "pacct_top"}) {
		t.Fatalf("details.accounts %v, want [pacct_nested pacct_top]", got)
	}
	if _, err := h.resolve(t, "acme", s.Ref); err != nil {
		t.Fatalf("refused delete removed the secret: %v", err)
	}

	for _, id := range []string{"pacct_nested", "pacct_top"} {
		if err := accounts.Remove(ctx, "acme", id); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.call(t, cmd("acme", "delete"), api.IDRequest{ID: s.ID}, nil); err != nil {
		t.Fatalf("delete without references: %v", err)
	}
}

// A pool reaches its machines with access.privateKey, resolved for each
// use: while a pool names the secret the delete is refused, naming the
// pool (a delete would leave its configure waiting on NOT_FOUND).
func TestDeleteRefusedWhileAPoolHoldsItAsItsKey(t *testing.T) {
	h := startHarness(t)
	s := h.put(t, "acme", api.SecretPutRequest{Name: "platform-ssh", Value: "-----BEGIN OPENSSH PRIVATE KEY-----"})
	other := h.put(t, "acme", api.SecretPutRequest{Name: "other-ssh", Value: "another-key"})
	ctx := context.Background()
	pools := h.env.Stores.PoolTable()
	write := func(id string, a *api.PoolAccess) {
		t.Helper()
		if _, err := pools.Create(ctx, "acme", id, api.Pool{ID: id, TenantID: "acme", Name: id, Access: a}); err != nil {
			t.Fatal(err)
		}
	}
	write("pool_hosts", &api.PoolAccess{User: "root", PrivateKey: s.Ref})
	write("pool_other", &api.PoolAccess{User: "root", PrivateKey: other.Ref})
	write("pool_plain", nil)

	ce := wantError(t, h.call(t, cmd("acme", "delete"), api.IDRequest{ID: s.ID}, nil), api.CodeInvalidState, "")
	if !reflect.DeepEqual(ce.Details.Pools, []string{"pool_hosts"}) || len(ce.Details.Accounts) != 0 ||
		!strings.Contains(ce.Message, "pool(s) pool_hosts (access.privateKey)") {
		t.Fatalf("refusal %q, details.pools %v, details.accounts %v", ce.Message, ce.Details.Pools, ce.Details.Accounts)
	}
	if _, err := h.resolve(t, "acme", s.Ref); err != nil {
		t.Fatalf("refused delete removed the secret: %v", err)
	}
	if err := pools.Remove(ctx, "acme", "pool_hosts"); err != nil {
		t.Fatal(err)
	}
	if err := h.call(t, cmd("acme", "delete"), api.IDRequest{ID: s.ID}, nil); err != nil {
		t.Fatalf("delete once no pool names it: %v", err)
	}
}
