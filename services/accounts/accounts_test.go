package accounts_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

func TestAccountLifecycle(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "")
	want := map[string]any{"token": secretT1, "location": "fsn1"}
	if a.Version != 1 || a.TenantID != tenant || a.Provider != fakeProviderID || a.Name != "main" ||
		!reflect.DeepEqual(a.Config, want) || a.CreatedAt.IsZero() || !a.UpdatedAt.Equal(a.CreatedAt) {
		t.Fatalf("created %+v, want version 1, tenant %s, config %v with the default location", a, tenant, want)
	}
	if got := must[api.Account](t, e.NC, bus.ResourceAccounts, "get", api.IDRequest{ID: a.ID}); !reflect.DeepEqual(got, a) {
		t.Fatalf("get %+v, want %+v", got, a)
	}

	renamed := must[api.Account](t, e.NC, bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: a.ID, Version: 1, Name: "renamed"})
	if renamed.Version != 2 || renamed.Name != "renamed" || !reflect.DeepEqual(renamed.Config, want) ||
		!renamed.CreatedAt.Equal(a.CreatedAt) || renamed.UpdatedAt.Before(a.CreatedAt) {
		t.Fatalf("renamed %+v, want version 2 and the same config", renamed)
	}
	_, err := call[api.Account](t, e.NC, tenant, bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: a.ID, Version: 1, Name: "stale"})
	wantErr(t, err, api.CodeConflict, "version")
	if got := must[api.Account](t, e.NC, bus.ResourceAccounts, "get", api.IDRequest{ID: a.ID}); !reflect.DeepEqual(got, renamed) {
		t.Fatalf("after a stale update: %+v, want %+v", got, renamed)
	}

	moved := must[api.Account](t, e.NC, bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: a.ID, Version: 2,
		Config: map[string]any{"token": "env://HCLOUD_TOKEN", "location": "nbg1"}})
	want = map[string]any{"token": "env://HCLOUD_TOKEN", "location": "nbg1"}
	if moved.Version != 3 || moved.Name != "renamed" || !reflect.DeepEqual(moved.Config, want) {
		t.Fatalf("moved %+v, want version 3, config %v", moved, want)
	}
	offers := must[api.List[api.Offer]](t, e.NC, bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: a.ID})
	if ids := offerIDs(offers.Items); !slices.Equal(ids, []string{"cx22-nbg1"}) {
		t.Fatalf("offers after moving to nbg1: %v", ids)
	}

	del := must[api.Deleted](t, e.NC, bus.ResourceAccounts, "delete", api.IDRequest{ID: a.ID})
	if del != (api.Deleted{ID: a.ID, Deleted: true}) {
		t.Fatalf("delete answered %+v", del)
	}
	_, err = call[api.Account](t, e.NC, tenant, bus.ResourceAccounts, "get", api.IDRequest{ID: a.ID})
	wantErr(t, err, api.CodeNotFound, "")
	_, err = call[api.Deleted](t, e.NC, tenant, bus.ResourceAccounts, "delete", api.IDRequest{ID: a.ID})
	wantErr(t, err, api.CodeNotFound, "")
	if n := countKeys(t, e.Stores.Accounts); n != 0 {
		t.Fatalf("%d account keys left after delete", n)
	}
}

func offerIDs(offers []api.Offer) []string {
	ids := make([]string, 0, len(offers))
	for _, o := range offers {
		ids = append(ids, o.ID)
	}
	return ids
}

func TestAccountOffers(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "fsn1")
	for _, tc := range []struct {
		query api.OfferQuery
		want  []string
	}{
		{api.OfferQuery{}, []string{"cx22-fsn1", "cx32-fsn1"}},
		{api.OfferQuery{MinVcpu: 4}, []string{"cx32-fsn1"}},
		{api.OfferQuery{Region: "nbg1"}, []string{}},
	} {
		got := must[api.List[api.Offer]](t, e.NC, bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: a.ID, Query: tc.query})
		if ids := offerIDs(got.Items); !slices.Equal(ids, tc.want) {
			t.Errorf("query %+v: offers %v, want %v", tc.query, ids, tc.want)
		}
	}
	for _, tc := range []struct {
		query api.OfferQuery
		path  string
	}{
		{api.OfferQuery{MinVcpu: -5}, "query.minVcpu"},
		{api.OfferQuery{MinMemoryGiB: -0.5}, "query.minMemoryGiB"},
		{api.OfferQuery{GPUs: -1}, "query.gpus"},
		{api.OfferQuery{Kind: "gpu"}, "query.kind"},
		{api.OfferQuery{Region: strings.Repeat("x", 100<<10)}, "query.region"},
		{api.OfferQuery{Region: "fsn1 "}, "query.region"},
	} {
		_, err := call[api.List[api.Offer]](t, e.NC, tenant, bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: a.ID, Query: tc.query})
		wantErr(t, err, api.CodeInvalidInput, tc.path)
	}
	_, err := call[api.List[api.Offer]](t, e.NC, other, bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: a.ID})
	wantErr(t, err, api.CodeNotFound, "")
	_, err = call[api.List[api.Offer]](t, e.NC, tenant, bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: "pacct_x"})
	wantErr(t, err, api.CodeInvalidInput, "id")
}

func TestAccountListPaging(t *testing.T) {
	e := start(t, 0)
	var created []string
	for i := range 5 {
		created = append(created, createAccount(t, e, fmt.Sprintf("a%d", i), "").ID)
	}
	var listed []string
	var sizes []int
	cursor := ""
	for page := 0; ; page++ {
		if page == 5 {
			t.Fatalf("more than 5 pages: cursor %q", cursor)
		}
		l := must[api.List[api.Account]](t, e.NC, bus.ResourceAccounts, "list", api.ListRequest{Limit: 2, Cursor: cursor})
		sizes = append(sizes, len(l.Items))
		for _, a := range l.Items {
			listed = append(listed, a.ID)
		}
		if cursor = l.NextCursor; cursor == "" {
			break
		}
	}
	slices.Sort(created)
	if !slices.Equal(sizes, []int{2, 2, 1}) || !slices.Equal(listed, created) {
		t.Fatalf("pages of %v listed %v, want pages of [2 2 1] listing %v", sizes, listed, created)
	}
	l, err := call[api.List[api.Account]](t, e.NC, other, bus.ResourceAccounts, "list", api.ListRequest{})
	if err != nil || len(l.Items) != 0 {
		t.Fatalf("other tenant lists %v (%v), want nothing", l.Items, err)
	}
	_, err = call[api.List[api.Account]](t, e.NC, tenant, bus.ResourceAccounts, "list", api.ListRequest{Limit: bus.MaxPageSize + 1})
	wantErr(t, err, api.CodeInvalidInput, "limit")
}

// plainValue is a would-be secret that must never be echoed.
const plainValue = "hunter2-plain"

func TestAccountCreateRefused(t *testing.T) {
	e := start(t, 0)
	body := func(provider, name string, config map[string]any) map[string]any {
		return map[string]any{"provider": provider, "name": name, "config": config}
	}
	tok := func(kv ...any) map[string]any {
		m := map[string]any{"token": secretT1}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		tenant string
		in     any
		code   api.Code
		path   string
	}{
		{"malformed JSON", tenant, `{"provider":`, api.CodeInvalidInput, ""},
		{"not an object", tenant, `[]`, api.CodeInvalidInput, ""},
		{"name not a string", tenant, `{"provider":"fake","name":5,"config":{}}`, api.CodeInvalidInput, "name"},
		{"config not an object", tenant, `{"provider":"fake","name":"a","config":"x"}`, api.CodeInvalidInput, "config"},
		{"unknown field", tenant, `{"provider":"fake","name":"a","config":{},"region":"x"}`, api.CodeInvalidInput, "region"},
		{"tenant mismatch", tenant, map[string]any{"tenantId": other, "provider": fakeProviderID, "name": "a", "config": tok()}, api.CodeAccessDenied, "tenantId"},
		{"invalid tenant subject", "T1", body(fakeProviderID, "a", tok()), api.CodeInvalidInput, "subject"},
		{"provider upper case", tenant, body("Fake", "a", tok()), api.CodeInvalidInput, "provider"},
		{"provider with wildcard", tenant, body("fa.*", "a", tok()), api.CodeInvalidInput, "provider"},
		{"provider missing", tenant, body("", "a", tok()), api.CodeInvalidInput, "provider"},
		{"unknown provider", tenant, body("nope", "a", tok()), api.CodeInvalidInput, "provider"},
		{"name missing", tenant, body(fakeProviderID, "", tok()), api.CodeInvalidInput, "name"},
		{"name too long", tenant, body(fakeProviderID, strings.Repeat("n", 129), tok()), api.CodeInvalidInput, "name"},
		{"plain token", tenant, body(fakeProviderID, "a", map[string]any{"token": plainValue}), api.CodeInvalidInput, "config.token"},
		{"nested plain apiKey", tenant, body(fakeProviderID, "a", tok("nested", map[string]any{"apiKey": plainValue})), api.CodeInvalidInput, "config.nested.apiKey"},
		{"malformed reference", tenant, body(fakeProviderID, "a", map[string]any{"token": "secret://t1/nope"}), api.CodeInvalidInput, "config.token"},
		{"unknown config field", tenant, body(fakeProviderID, "a", tok("region", "x")), api.CodeInvalidConfig, "config.region"},
		{"missing required", tenant, body(fakeProviderID, "a", map[string]any{"location": "fsn1"}), api.CodeInvalidConfig, "config.token"},
		{"no config", tenant, `{"provider":"fake","name":"a"}`, api.CodeInvalidConfig, "config.token"},
		{"option not offered", tenant, body(fakeProviderID, "a", tok("location", "hel1")), api.CodeInvalidConfig, "config.location"},
		{"option of wrong type", tenant, body(fakeProviderID, "a", tok("location", 5)), api.CodeInvalidConfig, "config.location"},
		{"other tenant's secret", tenant, body(fakeProviderID, "a", map[string]any{"token": secretT2}), api.CodeAccessDenied, "config.token"},
		{"missing secret", tenant, body(fakeProviderID, "a", map[string]any{"token": secretMissing}), api.CodeNotFound, "config.token"},
		{"scheme without store", tenant, body(fakeProviderID, "a", map[string]any{"token": "vault://kv/hcloud#token"}), api.CodeInvalidInput, "config.token"},
		{"nested other tenant's secret", tenant, body(fakeProviderID, "a", tok("nested", map[string]any{"apiKey": secretT2})), api.CodeAccessDenied, "config.nested.apiKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call[api.Account](t, e.NC, tc.tenant, bus.ResourceAccounts, "create", tc.in)
			wantErr(t, err, tc.code, tc.path)
			if strings.Contains(err.Message, plainValue) || strings.Contains(fmt.Sprint(err.Details), plainValue) {
				t.Errorf("error echoes the plain value: %v", err)
			}
			if n := countKeys(t, e.Stores.Accounts); n != 0 {
				t.Fatalf("%d account keys written by a refused create", n)
			}
		})
	}
}

func TestAccountUpdateRefused(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "")
	upd := func(version int64, name string, config map[string]any) api.AccountUpdateRequest {
		return api.AccountUpdateRequest{ID: a.ID, Version: version, Name: name, Config: config}
	}
	for _, tc := range []struct {
		name   string
		tenant string
		in     any
		code   api.Code
		path   string
	}{
		{"malformed id", tenant, api.AccountUpdateRequest{ID: "pacct_x", Version: 1}, api.CodeInvalidInput, "id"},
		{"id with a dot", tenant, api.AccountUpdateRequest{ID: tenant + "." + a.ID, Version: 1}, api.CodeInvalidInput, "id"},
		{"unknown id", tenant, api.AccountUpdateRequest{ID: api.NewID(api.PrefixAccount), Version: 1}, api.CodeNotFound, ""},
		{"other tenant", other, upd(1, "x", nil), api.CodeNotFound, ""},
		{"tenant mismatch", tenant, map[string]any{"tenantId": other, "id": a.ID, "version": 1}, api.CodeAccessDenied, "tenantId"},
		{"version of wrong type", tenant, map[string]any{"id": a.ID, "version": "1"}, api.CodeInvalidInput, "version"},
		{"version missing", tenant, upd(0, "x", nil), api.CodeInvalidInput, "version"},
		{"version ahead", tenant, upd(2, "x", nil), api.CodeConflict, "version"},
		{"name too long", tenant, upd(1, strings.Repeat("n", 129), nil), api.CodeInvalidInput, "name"},
		{"plain token", tenant, upd(1, "", map[string]any{"token": plainValue}), api.CodeInvalidInput, "config.token"},
		{"unknown config field", tenant, upd(1, "", map[string]any{"token": secretT1, "bogus": true}), api.CodeInvalidConfig, "config.bogus"},
		{"empty config", tenant, map[string]any{"id": a.ID, "version": 1, "config": map[string]any{}}, api.CodeInvalidConfig, "config.token"},
		{"other tenant's secret", tenant, upd(1, "", map[string]any{"token": secretT2}), api.CodeAccessDenied, "config.token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call[api.Account](t, e.NC, tc.tenant, bus.ResourceAccounts, "update", tc.in)
			wantErr(t, err, tc.code, tc.path)
			if got := must[api.Account](t, e.NC, bus.ResourceAccounts, "get", api.IDRequest{ID: a.ID}); !reflect.DeepEqual(got, a) {
				t.Fatalf("refused update changed the account: %+v, want %+v", got, a)
			}
		})
	}
}

// describeCounter counts the describe requests the accounts service sends.
// It listens on a second connection; a marker request sent afterwards on the
// service's connection arrives after them (one connection's messages arrive
// in order), so counting up to the marker needs no waiting on time.
func describeCounter(t *testing.T, e *env) func() int {
	t.Helper()
	nc := e.Connect(t)
	sub, err := nc.SubscribeSync(bus.ProviderCall(fakeProviderID, provider.VerbDescribe))
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		t.Fatalf("subscribe to describe: %v", err)
	}
	markers := 0
	return func() int {
		t.Helper()
		markers++
		marker := fmt.Sprintf("marker-%d", markers)
		ctx, cancel := context.WithTimeout(bus.WithRequestID(context.Background(), marker), 10*time.Second)
		defer cancel()
		if _, err := (provider.Remote{NC: e.NC, ID: fakeProviderID}).Describe(ctx); err != nil {
			t.Fatalf("marker describe: %v", err)
		}
		for n := 0; ; n++ {
			m, err := sub.NextMsg(10 * time.Second)
			if err != nil {
				t.Fatalf("describe requests: %v", err)
			}
			if m.Header.Get(bus.RequestIDHeader) == marker {
				return n
			}
		}
	}
}

func TestDescribeCached(t *testing.T) {
	e := start(t, 0)
	describes := describeCounter(t, e)
	a := createAccount(t, e, "a", "")
	createAccount(t, e, "b", "")
	must[api.Account](t, e.NC, bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: a.ID, Version: 1, Config: map[string]any{"token": secretT1}})
	if n := describes(); n != 1 {
		t.Fatalf("%d describe calls for 3 config validations within the TTL, want 1", n)
	}

	e = start(t, time.Nanosecond)
	describes = describeCounter(t, e)
	createAccount(t, e, "a", "")
	createAccount(t, e, "b", "")
	if n := describes(); n != 2 {
		t.Fatalf("%d describe calls for 2 creates with an expired TTL, want 2", n)
	}
}
