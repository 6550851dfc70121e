package bus_test

import (
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
)

// Find answers a record of the tenant that matches, none when no record
// of that tenant does (another tenant's never counts), and skips deleted
// records.
func TestReaderFind(t *testing.T) {
	env := bustest.Start(t)
	tb := env.Stores.PoolTable()
	ctx := t.Context()
	mk := func(tenant, name string) api.Pool {
		p := api.Pool{ID: api.NewID(api.PrefixPool), TenantID: tenant, Name: name, Class: api.PoolClassProvider, Version: 1}
		if _, err := tb.Create(ctx, tenant, p.ID, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	web := mk("t1", "web")
	mk("t1", "db")
	gone := mk("t1", "gone")
	mk("t2", "only-t2")
	if err := tb.Remove(ctx, "t1", gone.ID); err != nil {
		t.Fatal(err)
	}
	named := func(name string) func(*api.Pool) bool { return func(p *api.Pool) bool { return p.Name == name } }

	if got, ok, err := tb.Reader().Find(ctx, "t1", named("web")); err != nil || !ok || got.ID != web.ID {
		t.Fatalf("find web in t1: %+v %v %v, want %s", got, ok, err, web.ID)
	}
	for _, name := range []string{"only-t2", "gone", "nothing"} {
		if got, ok, err := tb.Reader().Find(ctx, "t1", named(name)); err != nil || ok {
			t.Fatalf("find %s in t1: %+v %v %v, want none", name, got, ok, err)
		}
	}
	if _, ok, err := tb.Reader().Find(ctx, "t3", named("web")); err != nil || ok {
		t.Fatalf("find in a tenant without records: %v %v, want none", ok, err)
	}
}
