package accounts_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

func TestPoolLifecycle(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "fsn1")
	flavors := []api.Flavor{{Name: "small", OfferID: "cx22-fsn1", Image: "ubuntu-24.04"}, {Name: "large", OfferID: "cx32-fsn1"}}
	p := must[api.Pool](t, e.NC, bus.ResourcePools, "create", api.PoolCreateRequest{Name: "web", SiteID: "site-1",
		Class: api.PoolClassProvider, ProviderAccountID: a.ID, Agent: api.PoolAgentNone, Flavors: flavors})
	if !api.ValidID(api.PrefixPool, p.ID) || p.Version != 1 || p.TenantID != tenant || p.Name != "web" || p.SiteID != "site-1" ||
		p.Class != api.PoolClassProvider || p.Agent != api.PoolAgentNone || p.ProviderAccountID != a.ID ||
		!reflect.DeepEqual(p.Flavors, flavors) || p.CreatedAt.IsZero() {
		t.Fatalf("created %+v", p)
	}
	if got := must[api.Pool](t, e.NC, bus.ResourcePools, "get", api.IDRequest{ID: p.ID}); !reflect.DeepEqual(got, p) {
		t.Fatalf("get %+v, want %+v", got, p)
	}
	q := createPool(t, e, a.ID, "cx22-fsn1")
	l := must[api.List[api.Pool]](t, e.NC, bus.ResourcePools, "list", api.ListRequest{Limit: 1})
	l2 := must[api.List[api.Pool]](t, e.NC, bus.ResourcePools, "list", api.ListRequest{Limit: 1, Cursor: l.NextCursor})
	if len(l.Items) != 1 || len(l2.Items) != 1 || l2.NextCursor != "" ||
		!slices.Equal([]string{l.Items[0].ID, l2.Items[0].ID}, sorted(p.ID, q.ID)) {
		t.Fatalf("pages %+v then %+v, want pools %s and %s", l, l2, p.ID, q.ID)
	}

	// A pool create rewrites its account unchanged: the version stays.
	if got := must[api.Account](t, e.NC, bus.ResourceAccounts, "get", api.IDRequest{ID: a.ID}); !reflect.DeepEqual(got, a) {
		t.Fatalf("account after pool creates: %+v, want %+v", got, a)
	}
	must[api.Account](t, e.NC, bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: a.ID, Version: 1, Name: "still-1"})

	for _, id := range []string{p.ID, q.ID} {
		if del := must[api.Deleted](t, e.NC, bus.ResourcePools, "delete", api.IDRequest{ID: id}); del != (api.Deleted{ID: id, Deleted: true}) {
			t.Fatalf("delete answered %+v", del)
		}
	}
	_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "get", api.IDRequest{ID: p.ID})
	wantErr(t, err, api.CodeNotFound, "")
	_, err = call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "get", api.IDRequest{ID: "pool_*"})
	wantErr(t, err, api.CodeInvalidInput, "id")
	if n := countKeys(t, e.Stores.Pools); n != 0 {
		t.Fatalf("%d pool keys left after delete", n)
	}
}

func sorted(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

func TestPoolCreateRefused(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "fsn1")
	foreign, cerr := call[api.Account](t, e.NC, other, bus.ResourceAccounts, "create", map[string]any{
		"provider": fakeProviderID, "name": "theirs", "config": map[string]any{"token": secretT2}})
	if cerr != nil {
		t.Fatalf("create the other tenant's account: %v", cerr)
	}
	poolsOf := func(t *testing.T) int { return countKeys(t, e.Stores.Pools) }
	for _, tc := range []struct {
		name string
		edit func(*api.PoolCreateRequest)
		code api.Code
		path string
	}{
		{"class missing", func(r *api.PoolCreateRequest) { r.Class = "" }, api.CodeInvalidInput, "class"},
		{"class unknown", func(r *api.PoolCreateRequest) { r.Class = "agent" }, api.CodeInvalidInput, "class"},
		{"account missing", func(r *api.PoolCreateRequest) { r.ProviderAccountID = "" }, api.CodeInvalidInput, "providerAccountId"},
		{"account malformed", func(r *api.PoolCreateRequest) { r.ProviderAccountID = "pacct_>" }, api.CodeInvalidInput, "providerAccountId"},
		{"account of another tenant", func(r *api.PoolCreateRequest) { r.ProviderAccountID = foreign.ID }, api.CodeInvalidInput, "providerAccountId"},
		{"account unknown", func(r *api.PoolCreateRequest) { r.ProviderAccountID = api.NewID(api.PrefixAccount) }, api.CodeInvalidInput, "providerAccountId"},
		{"agent missing", func(r *api.PoolCreateRequest) { r.Agent = "" }, api.CodeInvalidInput, "agent"},
		{"agent unknown", func(r *api.PoolCreateRequest) { r.Agent = "ssh" }, api.CodeInvalidInput, "agent"},
		{"name too long", func(r *api.PoolCreateRequest) { r.Name = strings.Repeat("n", 129) }, api.CodeInvalidInput, "name"},
		{"site too long", func(r *api.PoolCreateRequest) { r.SiteID = strings.Repeat("s", 129) }, api.CodeInvalidInput, "siteId"},
		{"no flavors", func(r *api.PoolCreateRequest) { r.Flavors = nil }, api.CodeInvalidInput, "flavors"},
		{"flavor name upper case", func(r *api.PoolCreateRequest) { r.Flavors[0].Name = "Small" }, api.CodeInvalidInput, "flavors[0].name"},
		{"flavor name missing", func(r *api.PoolCreateRequest) { r.Flavors[1].Name = "" }, api.CodeInvalidInput, "flavors[1].name"},
		{"flavor name too long", func(r *api.PoolCreateRequest) { r.Flavors[0].Name = strings.Repeat("f", 64) }, api.CodeInvalidInput, "flavors[0].name"},
		{"flavor name twice", func(r *api.PoolCreateRequest) { r.Flavors[1].Name = r.Flavors[0].Name }, api.CodeInvalidInput, "flavors[1].name"},
		{"offer missing", func(r *api.PoolCreateRequest) { r.Flavors[1].OfferID = "" }, api.CodeInvalidInput, "flavors[1].offerId"},
		{"image too long", func(r *api.PoolCreateRequest) { r.Flavors[0].Image = strings.Repeat("i", 256) }, api.CodeInvalidInput, "flavors[0].image"},
		{"image with a control character", func(r *api.PoolCreateRequest) { r.Flavors[0].Image = "ubu\x01ntu" }, api.CodeInvalidInput, "flavors[0].image"},
		{"unknown offer", func(r *api.PoolCreateRequest) { r.Flavors[1].OfferID = "cx99-fsn1" }, api.CodeInvalidInput, "flavors[1].offerId"},
		{"offer of another location", func(r *api.PoolCreateRequest) { r.Flavors[0].OfferID = "cx22-nbg1" }, api.CodeInvalidInput, "flavors[0].offerId"},
		{"tenant mismatch", func(r *api.PoolCreateRequest) { r.TenantID = other }, api.CodeAccessDenied, "tenantId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := api.PoolCreateRequest{Class: api.PoolClassProvider, ProviderAccountID: a.ID, Agent: api.PoolAgentNone,
				Flavors: []api.Flavor{{Name: "small", OfferID: "cx22-fsn1"}, {Name: "large", OfferID: "cx32-fsn1"}}}
			tc.edit(&in)
			_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "create", in)
			wantErr(t, err, tc.code, tc.path)
			if n := poolsOf(t); n != 0 {
				t.Fatalf("%d pool keys written by a refused create", n)
			}
		})
	}
	for _, tc := range []struct {
		name, in string
		path     string
	}{
		{"malformed JSON", `{"class":"provider",`, ""},
		{"flavors not an array", `{"class":"provider","flavors":"small"}`, "flavors"},
		{"flavor name not a string", `{"class":"provider","flavors":[{"name":5}]}`, "flavors[0].name"},
		{"unknown field", `{"class":"provider","size":"xl"}`, "size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "create", tc.in)
			wantErr(t, err, api.CodeInvalidInput, tc.path)
			if n := poolsOf(t); n != 0 {
				t.Fatalf("%d pool keys written by a refused create", n)
			}
		})
	}
	if got := must[api.Account](t, e.NC, bus.ResourceAccounts, "get", api.IDRequest{ID: a.ID}); !reflect.DeepEqual(got, a) {
		t.Fatalf("refused pool creates changed the account: %+v, want %+v", got, a)
	}
}

func TestAccountDeleteRefusedWhilePoolExists(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "")
	p := createPool(t, e, a.ID, "cx22-fsn1")
	_, err := call[api.Deleted](t, e.NC, tenant, bus.ResourceAccounts, "delete", api.IDRequest{ID: a.ID})
	wantErr(t, err, api.CodeInvalidState, "")
	if pools := err.Details.Pools; !reflect.DeepEqual(pools, []string{p.ID}) {
		t.Fatalf("details.pools = %v, want [%s]", pools, p.ID)
	}
	if n := countKeys(t, e.Stores.Accounts); n != 1 {
		t.Fatalf("%d account keys after a refused delete, want 1", n)
	}
	must[api.Deleted](t, e.NC, bus.ResourcePools, "delete", api.IDRequest{ID: p.ID})
	must[api.Deleted](t, e.NC, bus.ResourceAccounts, "delete", api.IDRequest{ID: a.ID})
	if n := countKeys(t, e.Stores.Accounts); n != 0 {
		t.Fatalf("%d account keys after delete, want 0", n)
	}
}

func TestPoolDeleteRefusedWhileInstanceExists(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "")
	p := createPool(t, e, a.ID, "cx22-fsn1")
	q := createPool(t, e, a.ID, "cx32-fsn1")
	inst := api.Instance{ID: api.NewID(api.PrefixInstance), TenantID: tenant, PoolID: p.ID, Flavor: "fa", Name: "vm"}
	putInstance(t, e, tenant, inst)
	putInstance(t, e, tenant, api.Instance{ID: api.NewID(api.PrefixInstance), TenantID: tenant, PoolID: q.ID})
	putInstance(t, e, other, api.Instance{ID: api.NewID(api.PrefixInstance), TenantID: other, PoolID: q.ID})

	_, err := call[api.Deleted](t, e.NC, tenant, bus.ResourcePools, "delete", api.IDRequest{ID: p.ID})
	wantErr(t, err, api.CodeInvalidState, "")
	if ids := err.Details.Instances; !reflect.DeepEqual(ids, []string{inst.ID}) {
		t.Fatalf("details.instances = %v, want [%s]", ids, inst.ID)
	}
	if n := countKeys(t, e.Stores.Pools); n != 2 {
		t.Fatalf("%d pool keys after a refused delete, want 2", n)
	}
	if err := e.Stores.Instances.Delete(context.Background(), tenant+"."+inst.ID); err != nil {
		t.Fatalf("delete instance: %v", err)
	}
	must[api.Deleted](t, e.NC, bus.ResourcePools, "delete", api.IDRequest{ID: p.ID})
	_, err = call[api.Deleted](t, e.NC, tenant, bus.ResourcePools, "delete", api.IDRequest{ID: q.ID})
	wantErr(t, err, api.CodeInvalidState, "")
	if n := countKeys(t, e.Stores.Pools); n != 1 {
		t.Fatalf("%d pool keys, want 1", n)
	}
}

// putInstance writes inst of tnt into the instances bucket, as the
// instances service does.
func putInstance(t *testing.T, e *env, tnt string, inst api.Instance) {
	t.Helper()
	if _, err := e.Stores.InstanceTable().Create(context.Background(), tnt, inst.ID, inst); err != nil {
		t.Fatalf("put instance: %v", err)
	}
}

// A pool's access is kept as given (the key a reference, never resolved
// here); a bad one is refused naming the field.
func TestPoolAccess(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "fsn1")
	access := &api.PoolAccess{User: "root", PrivateKey: secretT1,
		Configure: &api.AccessStep{Hook: "bootstrap", TimeoutMs: 60000}, Drain: &api.AccessStep{Script: "true", OnFailure: api.OnFailureFail}}
	req := api.PoolCreateRequest{Class: api.PoolClassProvider, ProviderAccountID: a.ID, Agent: api.PoolAgentNone,
		Flavors: []api.Flavor{{Name: "small", OfferID: "cx22-fsn1", Image: "ubuntu-24.04"}}, Access: access}
	p := must[api.Pool](t, e.NC, bus.ResourcePools, "create", req)
	if got := must[api.Pool](t, e.NC, bus.ResourcePools, "get", api.IDRequest{ID: p.ID}); !reflect.DeepEqual(got.Access, access) {
		t.Fatalf("access kept as %+v, want %+v", got.Access, access)
	}
	// checked at create like an account's references: another tenant's
	// key and a missing secret are refused now, not at the first configure
	other := *access
	other.PrivateKey = "secret://other/sec_01jdzzzzzzzzzzzzzzzzzzzzzz"
	req.Access = &other
	_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "create", req)
	wantErr(t, err, api.CodeAccessDenied, "access.privateKey")
	other.PrivateKey = "secret://" + tenant + "/sec_01jdzzzzzzzzzzzzzzzzzzzzzz"
	_, err = call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "create", req)
	wantErr(t, err, api.CodeNotFound, "access.privateKey")
	bad := *access
	bad.PrivateKey = "-----BEGIN OPENSSH PRIVATE KEY-----"
	req.Access = &bad
	_, err = call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "create", req)
	wantErr(t, err, api.CodeInvalidInput, "access.privateKey")
	if strings.Contains(err.Error(), "BEGIN OPENSSH") {
		t.Fatalf("the refusal quotes the value: %v", err)
	}
}
