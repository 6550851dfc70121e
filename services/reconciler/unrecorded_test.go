package reconciler

import (
	"context"
	"slices"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/memory"
)

// addMemoryPoolWithout serves the harness's cloud as provider id with the
// memory provider's capabilities but without, with an account and a pool.
func (h *harness) addMemoryPoolWithout(id, without string) api.Pool {
	h.t.Helper()
	d := memory.Definition(h.cloud).Definition()
	d.ID = id
	d.Capabilities = slices.DeleteFunc(d.Capabilities, func(c string) bool { return c == without })
	return h.servePool(provider.MustDefine(d), id, map[string]any{"token": "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", "region": "mem1"},
		api.Flavor{Name: "small", OfferID: "small", Image: "debian-12"})
}

// A provider without delete.byKey: the deletion of an instance whose
// create's outcome is unknown (the reconciler gave up on a create that
// then made its machine) falls back to the keyed create, which finds that
// machine (no second one), and deletes it by id.
func TestDeleteWithoutDeleteByKeyFindsTheMachineWithTheKeyedCreate(t *testing.T) {
	opts := fastOptions()
	opts.CallTimeout = time.Second
	h := newHarnessHoldingLiveRetries(t, opts) // only the delete acts
	pool := h.addMemoryPoolWithout("memory-nokey", provider.CapabilityDeleteByKey)
	// The create hangs until the reconciler's call ends (no reply: its
	// outcome is unknown), then lands late: the test sends it again by hand.
	h.cloud.SetHung(provider.VerbCreate, true)
	inst := h.create(api.InstanceCreateRequest{Name: "lost", PoolID: pool.ID})
	h.waitFor(inst.ID, "a create given up on", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Retries > 0 && i.Status.CreateRequested && i.Status.Machine == nil
	})
	h.cloud.SetHung(provider.VerbCreate, false)
	acct, _, err := h.env.Stores.AccountTable().Get(context.Background(), tenant, pool.ProviderAccountID)
	if err != nil {
		t.Fatal(err)
	}
	remote := provider.Remote{NC: h.env.NC, ID: "memory-nokey"}
	lost, err := remote.Create(context.Background(), acct.ProviderAccount(), inst.ID, api.MachineSpec{Name: "lost", OfferID: "small", Image: "debian-12"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(inst.ID)
	var deleted []string
	for _, c := range h.cloud.Log() {
		if c.Verb == provider.VerbDelete && c.Err == nil {
			deleted = append(deleted, c.Target)
		}
	}
	if len(deleted) != 1 || deleted[0] != lost.ID || len(h.cloud.Machines()) != 0 {
		t.Fatalf("deleted %v, machines left %+v; want the lost create's %s deleted, none left", deleted, h.cloud.Machines(), lost.ID)
	}
}
