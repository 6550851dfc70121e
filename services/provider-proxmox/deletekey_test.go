package proxmox

import (
	"context"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// keyedVMs are the emulator's VMs whose description carries key.
func (e *env) keyedVMs(key string) []emulator.VMSnapshot {
	var out []emulator.VMSnapshot
	for _, v := range e.machines() {
		if k, ok := descriptionValue(v.Description, keyLinePrefix); ok && k == key {
			out = append(out, v)
		}
	}
	return out
}

// Delete by key (delete.byKey) destroys the key's VM found by its config,
// also a half-made clone a failed create left untagged (list and get do
// not show it), without a clone; another key's VM stays; once none is
// left, and for a key never used, it answers NOT_FOUND.
func TestDeleteByKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(*testing.T, *env)
	}{
		{"finished VM", func(t *testing.T, e *env) { e.create(t, "inst_del") }},
		{"half-made clone", func(t *testing.T, e *env) {
			e.emu.InjectRouteFault(emulator.RouteFault{Route: emulator.RouteConfigPut, Message: "got timeout"})
			if _, err := e.client.Create(context.Background(), e.call("inst_del"), spec("inst_del")); err == nil {
				t.Fatal("create succeeded despite the fault")
			}
			if page := e.mustList(t); len(page) != 1 || page[0].IdempotencyKey != "inst_other" {
				t.Fatalf("list = %+v, want only inst_other's VM", page)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withDurations)
			ctx := context.Background()
			other := e.create(t, "inst_other")
			tc.make(t, e)
			if n := len(e.keyedVMs("inst_del")); n != 1 {
				t.Fatalf("%d VMs carry the key before the delete, want 1", n)
			}
			e.emu.ResetCalls()
			if err := e.client.DeleteByKey(ctx, e.call("inst_del"), "inst_del"); err != nil {
				t.Fatalf("delete by key: %v", err)
			}
			if left := e.keyedVMs("inst_del"); len(left) != 0 {
				t.Fatalf("VMs of the key left after the delete: %+v", left)
			}
			if n := e.emu.Calls(emulator.RouteClone); n != 0 {
				t.Fatalf("the delete sent %d clones", n)
			}
			for _, key := range []string{"inst_del", "inst_never"} {
				if err := e.client.DeleteByKey(ctx, e.call(key), key); !api.IsCode(err, api.CodeNotFound) {
					t.Fatalf("delete by key %s with no VM carrying it: %v, want NOT_FOUND", key, err)
				}
			}
			if m := e.mustGet(t, other.ID); m == nil {
				t.Fatalf("another key's VM %s was deleted", other.ID)
			}
		})
	}
}

// A VM of the key's slot being cloned (its config holds only the lock, so
// it may be a create of the key still making it) is neither deleted nor
// reported absent: delete by key answers a retryable vm_locked, and
// deletes it once the clone has ended.
func TestDeleteByKeyWaitsForARunningClone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	vmid := keySlot("inst_lock", e.client.cfg.VMIDMin, e.client.cfg.VMIDMax)
	e.seed(t, "", ManagedDescription("inst_lock", testOffer), vmid)
	if err := e.emu.SetVMLock(vmid, "clone"); err != nil {
		t.Fatal(err)
	}
	err := e.client.DeleteByKey(ctx, e.call("inst_lock"), "inst_lock")
	if ce := api.AsComputeError(err); ce.Code != api.CodeProviderError || !strings.Contains(ce.Message, "being cloned") {
		t.Fatalf("delete by key of a VM being cloned: %v, want PROVIDER_ERROR vm_locked", err)
	}
	if n := e.emu.Calls(emulator.RouteDestroy); n != 0 {
		t.Fatalf("%d destroys sent under the clone lock", n)
	}
	if err := e.emu.SetVMLock(vmid, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.client.DeleteByKey(ctx, e.call("inst_lock"), "inst_lock"); err != nil {
		t.Fatalf("delete by key after the clone: %v", err)
	}
	if left := e.keyedVMs("inst_lock"); len(left) != 0 {
		t.Fatalf("VMs of the key left: %+v", left)
	}
}
