package reconciler

import (
	"fmt"
	"slices"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
)

// Instance names are unique per pool: a second create of a name in the
// same pool is ALREADY_EXISTS naming the holder; another pool, a replay of
// the first create's idempotency key and a name whose holder is being
// deleted pass.
func TestInstanceNamesAreUniquePerPool(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	first := h.create(api.InstanceCreateRequest{Name: "web-1", IdempotencyKey: "k1"})

	err := h.call("create", api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small", Name: "web-1"}, nil)
	ce := api.AsComputeError(err)
	if ce == nil || ce.Code != api.CodeAlreadyExists || ce.Path() != "name" || ce.Details.ID != first.ID {
		t.Fatalf("second web-1 in the pool: %v (details %+v), want ALREADY_EXISTS at name naming %s", err, ce, first.ID)
	}
	replay := h.create(api.InstanceCreateRequest{Name: "web-1", IdempotencyKey: "k1"})
	if replay.ID != first.ID {
		t.Fatalf("replay of the first create answered %s, want %s", replay.ID, first.ID)
	}
	if other := h.create(api.InstanceCreateRequest{Name: "web-1", PoolID: h.otherPool()}); other.ID == first.ID {
		t.Fatal("web-1 in another pool answered the first instance")
	}
	if err := h.call("delete", api.IDRequest{ID: first.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if again := h.create(api.InstanceCreateRequest{Name: "web-1"}); again.ID == first.ID {
		t.Fatal("web-1 while the first is being deleted answered the first instance")
	}
}

// Duplicates made before names were unique keep working: get and delete
// address them by id.
func TestExistingDuplicateNamesKeepWorking(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	first := h.create(api.InstanceCreateRequest{Name: "old"})
	dup := *h.record(first.ID)
	dup.ID = api.NewID(api.PrefixInstance)
	if _, err := h.env.Stores.InstanceTable().Create(t.Context(), tenant, dup.ID, dup); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first.ID, dup.ID} {
		if got, err := h.get(id); err != nil || got.Name != "old" {
			t.Fatalf("get %s: %v %+v", id, err, got)
		}
		if err := h.call("delete", api.IDRequest{ID: id}, nil); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
}

// An unknown flavor is INVALID_INPUT at flavor listing the pool's flavors.
func TestUnknownFlavorListsTheFlavors(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	err := h.call("create", api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "huge"}, nil)
	ce := api.AsComputeError(err)
	if ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "flavor" || !slices.Equal(ce.Details.Allowed, []string{"small", "bogus"}) {
		t.Fatalf("unknown flavor: %v (details %+v), want INVALID_INPUT at flavor allowing small, bogus", err, ce)
	}
}

// BenchmarkCreateNameCheck prints what the name check costs a create: a
// named and an unnamed create (no check) in a tenant that already has
// COMPUTE_BENCH_INSTANCES instances (default 1000) in the pool. The check
// reads the tenant's instances until it finds the name, so it grows with
// the tenant.
func BenchmarkCreateNameCheck(b *testing.B) {
	n := bustest.EnvInt("COMPUTE_BENCH_INSTANCES", 1000)
	h := newHarness(b, fastOptions(), startAPI)
	for i := range n {
		inst := api.Instance{ID: api.NewID(api.PrefixInstance), TenantID: tenant, PoolID: h.pool.ID, Flavor: "small",
			Image: "debian-12", Name: fmt.Sprintf("old-%d", i), Generation: 1}
		if _, err := h.env.Stores.InstanceTable().Create(b.Context(), tenant, inst.ID, inst); err != nil {
			b.Fatal(err)
		}
	}
	for _, named := range []bool{false, true} {
		b.Run(fmt.Sprintf("named=%v", named), func(b *testing.B) {
			i := 0
			for b.Loop() {
				req := api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small"}
				if named {
					req.Name = fmt.Sprintf("new-%d", i)
				}
				i++
				if err := h.call("create", req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
