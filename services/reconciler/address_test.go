package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
)

// addressPool writes a pool of the harness's account whose network hands
// out the addresses of rng, and returns it.
func (h *harness) addressPool(rng api.AddressRange) api.Pool {
	h.t.Helper()
	p := h.pool
	p.ID = api.NewID(api.PrefixPool)
	p.Network = &api.PoolNetwork{Addresses: &rng}
	if _, err := h.env.Stores.PoolTable().Create(context.Background(), tenant, p.ID, p); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// heldAddresses reads every address key of pool: key → holder.
func (h *harness) heldAddresses(pool string) map[string]string {
	h.t.Helper()
	ctx := context.Background()
	kv := h.env.Stores.Addresses
	out := map[string]string{}
	lister, err := kv.ListKeysFiltered(ctx, tenant+"."+pool+".>")
	if err != nil {
		h.t.Fatal(err)
	}
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			h.t.Fatalf("get %s: %v", k, err)
		}
		out[k] = string(e.Value())
	}
	return out
}

// checkAddresses fails the test unless every instance of ids records an
// address of span that it holds, no two share one, and the pool's bucket
// holds nothing else.
func (h *harness) checkAddresses(pool string, span api.AddressSpan, ids []string) {
	h.t.Helper()
	held := h.heldAddresses(pool)
	seen := map[string]string{}
	for _, id := range ids {
		rec := h.record(id).Status.Address
		if rec == nil {
			h.t.Fatalf("%s records no address", id)
		}
		p, err := netip.ParsePrefix(rec.Address)
		if err != nil || !span.Contains(p.Addr()) || p.Bits() != span.Prefix.Bits() || rec.Gateway != span.Gateway.String() {
			h.t.Fatalf("%s records %+v, not an address of %s", id, rec, span.Prefix)
		}
		if other, dup := seen[rec.Address]; dup {
			h.t.Fatalf("%s and %s both record %s", other, id, rec.Address)
		}
		seen[rec.Address] = id
		if key := addressKey(tenant, pool, p.Addr()); held[key] != id {
			h.t.Fatalf("%s records %s, whose key is held by %q", id, rec.Address, held[key])
		}
	}
	if len(held) != len(ids) {
		dump, _ := json.MarshalIndent(held, "", "  ")
		h.t.Fatalf("%d addresses held for %d instances (leak):\n%s", len(held), len(ids), dump)
	}
}

// A range of two addresses: two instances get one each, the third is
// refused for capacity naming network.addresses (and nothing is created
// for it); deleting one frees its address (after its machine is gone) and
// the third gets it.
func TestStaticAddressRangeExhaustedThenReleased(t *testing.T) {
	h := newHarness(t, fastOptions())
	rng := api.AddressRange{CIDR: "10.20.0.0/24", Gateway: "10.20.0.1", DNS: []string{"10.20.0.2"}, First: "10.20.0.10", Last: "10.20.0.11"}
	p := h.addressPool(rng)
	span, err := rng.Parse("network.addresses")
	if err != nil {
		t.Fatal(err)
	}
	a := h.create(api.InstanceCreateRequest{PoolID: p.ID, Name: "a"})
	b := h.create(api.InstanceCreateRequest{PoolID: p.ID, Name: "b"})
	h.waitPhase(a.ID, api.PhaseRunning)
	h.waitPhase(b.ID, api.PhaseRunning)
	h.checkAddresses(p.ID, span, []string{a.ID, b.ID})

	c := h.create(api.InstanceCreateRequest{PoolID: p.ID, Name: "c"})
	refused := h.waitFor(c.ID, "refused for capacity", func(i *api.Instance, err error) bool {
		cond := providerCondition(i)
		return err == nil && cond != nil && cond.Reason == api.ReasonOf(api.CodeCapacityUnavailable) &&
			strings.Contains(cond.Message, "network.addresses")
	})
	if refused.Status.CreateRequested || refused.Status.Machine != nil || len(h.cloud.ByKey()) != 2 {
		t.Fatalf("an exhausted range still sent a create: %+v, %d machines", refused.Status, len(h.cloud.ByKey()))
	}

	if err := h.call("delete", api.IDRequest{ID: a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(a.ID)
	h.waitPhase(c.ID, api.PhaseRunning)
	h.checkAddresses(p.ID, span, []string{b.ID, c.ID})
	if got, was := h.record(c.ID).Status.Address.Address, "10.20.0.10/24"; got != was && h.record(b.ID).Status.Address.Address != was {
		t.Fatalf("c got %s: the released address was not handed out again", got)
	}
	for _, id := range []string{b.ID, c.ID} {
		if err := h.call("delete", api.IDRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
		h.waitGone(id)
	}
	if held := h.heldAddresses(p.ID); len(held) != 0 {
		t.Fatalf("addresses still held after every instance is gone: %v", held)
	}
}

// Environment of TestAddressChildProcess: the NATS URL and the directory
// of its markers.
const (
	addressChildEnv     = "COMPUTE_TEST_ADDRESS_CHILD_NATS"
	addressChildDirEnv  = "COMPUTE_TEST_ADDRESS_CHILD_DIR"
	addressKillsPerInst = 1 // kills after the claim, per instance
)

// TestAddressChildProcess is not a test: it is the reconciler process
// TestStaticAddressSurvivesKillBetweenClaimAndCreate starts. It SIGKILLs
// itself right after it claims an instance's address and before the
// create is recorded and sent, once per instance (a marker file says it
// did).
func TestAddressChildProcess(t *testing.T) {
	nc, st := bustest.ChildConnect(t, addressChildEnv, "reconciler-address-child", "TestStaticAddressSurvivesKillBetweenClaimAndCreate")
	dir := os.Getenv(addressChildDirEnv)
	o := fastOptions()
	o.AckWait, o.Logger = time.Second, zerolog.Nop()
	o.Hooks.AfterAddressClaim = func(id string) {
		marker := filepath.Join(dir, id)
		if _, err := os.Stat(marker); err == nil {
			return
		}
		if err := os.WriteFile(marker, nil, 0o600); err == nil {
			bustest.KillSelf()
		}
	}
	if _, err := Start(nc, st, o); err != nil {
		t.Fatal(err)
	}
	select {} // until it kills itself, or the test kills it
}

// Kill test: the reconciler process is SIGKILLed between claiming an
// instance's address and sending its create, once for every instance
// (and, since a kill stops every pass of the process, at other points of
// other instances' passes). Each time it is started again. At the end
// every instance runs with an address it holds, no two share one, the
// provider made one machine per instance, and once they are deleted no
// address is held: nothing leaked, nothing doubled.
func TestStaticAddressSurvivesKillBetweenClaimAndCreate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a process per instance")
	}
	const n = 10
	h := newHarness(t, fastOptions())
	h.rec.Stop()     // the child processes reconcile
	h.startAPIOnly() // and this process answers the instance API
	rng := api.AddressRange{CIDR: "10.30.0.0/24", Gateway: "10.30.0.1"}
	p := h.addressPool(rng)
	span, _ := rng.Parse("network.addresses")
	dir := t.TempDir()

	ids := make([]string, n)
	for i := range n {
		ids[i] = h.create(api.InstanceCreateRequest{PoolID: p.ID, Name: fmt.Sprintf("k%d", i)}).ID
	}
	kills := 0
	deadline := time.Now().Add(2 * time.Minute)
	child := &bustest.Child{Test: "TestAddressChildProcess", Env: []string{addressChildEnv + "=" + h.env.URL, addressChildDirEnv + "=" + dir}}
	for {
		child.Start(t)
		killed := false
		for !killed && h.unconvergedRunning(ids) != "" && time.Now().Before(deadline) {
			select {
			case <-child.Done():
				killed = true
			case <-time.After(20 * time.Millisecond):
			}
		}
		if killed {
			kills++
			continue
		}
		child.Kill()
		break
	}
	if bad := h.unconvergedRunning(ids); bad != "" {
		t.Fatalf("after %d kills: %s", kills, bad)
	}
	markers, _ := os.ReadDir(dir)
	t.Logf("the reconciler killed itself %d times (after the claim of %d instances)", kills, len(markers))
	if len(markers) != n*addressKillsPerInst {
		t.Fatalf("%d instances were killed after their claim, want %d", len(markers), n)
	}
	h.checkAddresses(p.ID, span, ids)
	if got := len(h.cloud.ByKey()); got != n {
		t.Fatalf("the provider holds %d machines for %d instances", got, n)
	}

	h.rec = h.startReconciler(h.env.Connect(t))
	for _, id := range ids {
		if err := h.call("delete", api.IDRequest{ID: id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		h.waitGone(id)
	}
	if held := h.heldAddresses(p.ID); len(held) != 0 {
		t.Fatalf("addresses still held after every instance is gone: %v", held)
	}
}

// unconvergedRunning describes the first instance of ids not running, or "".
func (h *harness) unconvergedRunning(ids []string) string {
	for _, id := range ids {
		inst, _, err := h.env.Stores.InstanceTable().Get(context.Background(), tenant, id)
		if err != nil || inst.Status.Phase != api.PhaseRunning || inst.Status.ObservedGeneration != inst.Generation {
			return fmt.Sprintf("%s is %s (err %v)", id, inst.Status.Phase, err)
		}
	}
	return ""
}
