package reconciler

import (
	"context"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// TestReplayAfterCrashBeforeInstanceWrite is the crash between a create's
// idempotency claim and its instance's write: the claim names an id that
// was never written (no record, no delete marker), so the replay creates
// the instance under that id; a claim of an older version marked Written
// whose instance is gone answers INVALID_STATE as a delete marker does.
func TestReplayAfterCrashBeforeInstanceWrite(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	ids := bus.NewTable[idempotencyRecord](h.env.Stores.Idempotency, "idempotency record")
	claim := func(key string, written bool) string {
		in := api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small", IdempotencyKey: key, Power: api.PowerOn, Image: "debian-12"}
		id := api.NewID(api.PrefixInstance)
		_, claimed, err := h.rec.claimIdempotency(context.Background(), tenant, &in, id)
		if err != nil || claimed != id {
			t.Fatalf("claim: %q, %v", claimed, err)
		}
		if written {
			if _, _, err := ids.Mutate(context.Background(), tenant, bus.IdempotencyID(createOp, key), func(r *idempotencyRecord) error {
				r.Written = true
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	id := claim("crashed-1", false)
	inst := h.create(api.InstanceCreateRequest{IdempotencyKey: "crashed-1"})
	if inst.ID != id {
		t.Fatalf("replay created %s, want the claimed %s", inst.ID, id)
	}
	old := claim("old-version", true)
	err := h.call("create", api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small", IdempotencyKey: "old-version"}, nil)
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidState || ce.Details.ID != old {
		t.Fatalf("replay of a claim marked written whose instance is gone: %v, want INVALID_STATE naming %s", err, old)
	}
}
