package proxmox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// Field failure 1: two concurrent creates with the same key, both seeing
// the slot free, meet on one VMID: PVE lets one clone through, the other
// finds that clone and finishes with it.
func TestFieldConcurrentCreatesSameKey(t *testing.T) {
	b := providertest.NewBarrier(2, func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/cluster/resources") })
	e := newEnv(t, withDurations, func(su *setup) {
		su.config[FieldCACert] = nil
		su.options = append(su.options, WithHTTPClient(&http.Client{Transport: b}))
	})
	b.Base = pinnedTransport(t, e.srv)
	var wg sync.WaitGroup
	got := make([]*api.ExternalMachine, 2)
	errs := make([]error, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = e.client.Create(context.Background(), e.call("inst_twin"), spec("inst_twin"))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if got[0].ID != got[1].ID {
		t.Fatalf("the creates answered VMIDs %s and %s, want one", got[0].ID, got[1].ID)
	}
	if ms := e.machines(); len(ms) != 1 || strconv.Itoa(ms[0].VMID) != got[0].ID || ms[0].Status != emulator.StatusRunning {
		t.Fatalf("machines = %+v, want VM %s running alone", ms, got[0].ID)
	}
	if n := e.emu.Calls(emulator.RouteClone); n != 2 {
		t.Errorf("%d clone requests, want 2 (both saw the slot free; PVE refused one)", n)
	}
}

// Field failure 2: the key's slot holds a VM with another key (and the
// same name, so its config must be read): the next slot is used.
func TestFieldSlotHeldByAnotherKey(t *testing.T) {
	e := newEnv(t)
	slots := probeSlots("inst_next", DefaultVMIDMin, DefaultVMIDMax)
	if _, err := e.emu.SeedVMs(emulator.SeedSpec{Count: 1, FirstVMID: slots[0], Tags: ManagedTag,
		Description: ManagedDescription("inst_other", testOffer), Config: map[string]string{"name": "inst-next"}}); err != nil {
		t.Fatal(err)
	}
	m := e.create(t, "inst_next")
	if m.ID != strconv.Itoa(slots[1]) {
		t.Fatalf("created VM %s, want the next slot %d", m.ID, slots[1])
	}
	if key, _ := descriptionValue(e.vm(t, slots[0]).Description, keyLinePrefix); key != "inst_other" {
		t.Fatalf("the other key's VM now records %q", key)
	}
}

// Field failure 2, second half: all probed slots are held.
func TestFieldAllSlotsHeld(t *testing.T) {
	e := newEnv(t, func(su *setup) {
		su.config[FieldVMIDMin] = 10000
		su.config[FieldVMIDMax] = 10000 + MaxProbes - 1
	})
	if _, err := e.emu.SeedVMs(emulator.SeedSpec{Count: MaxProbes, FirstVMID: 10000, Tags: "other"}); err != nil {
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	_, err := e.client.Create(context.Background(), e.call("inst_full"), spec("inst_full"))
	providertest.WantCode(t, err, api.CodeCapacityUnavailable)
	if n, clones := e.calls(), e.emu.Calls(emulator.RouteClone); n != 1+MaxProbes || clones != 0 {
		t.Fatalf("%d requests and %d clones, want the cluster list and each slot's config (whose VM it is is read from the VM, not the list)", n, clones)
	}
}

// Field failure 3: four keys hashing to the same slot get four VMIDs,
// each VM recording its own key.
func TestFieldFourKeysOneSlot(t *testing.T) {
	const lo, hi = 10000, 10009
	e := newEnv(t, func(su *setup) {
		su.config[FieldVMIDMin] = lo
		su.config[FieldVMIDMax] = hi
	})
	keys := collidingKeys(4, lo, hi)
	seen := map[string]bool{}
	for _, key := range keys {
		m := e.create(t, key)
		if seen[m.ID] {
			t.Fatalf("key %s got VMID %s twice", key, m.ID)
		}
		seen[m.ID] = true
		vmid, _ := strconv.Atoi(m.ID)
		if got, _ := descriptionValue(e.vm(t, vmid).Description, keyLinePrefix); got != key {
			t.Fatalf("VM %d records key %q, want %q", vmid, got, key)
		}
		if !slices.Contains(probeSlots(key, lo, hi), vmid) {
			t.Fatalf("VM %d is not one of %s's slots", vmid, key)
		}
	}
	for _, key := range keys { // every retry finds its own VM
		vmid, _ := strconv.Atoi(e.create(t, key).ID)
		if got, _ := descriptionValue(e.vm(t, vmid).Description, keyLinePrefix); got != key {
			t.Fatalf("retry of %s answered VM %d of key %q", key, vmid, got)
		}
	}
	if len(e.machines()) != 4 {
		t.Fatalf("%d machines, want 4", len(e.machines()))
	}
}

// The same with the four creates racing.
func TestFieldFourKeysOneSlotConcurrently(t *testing.T) {
	const lo, hi = 10000, 10009
	e := newEnv(t, withDurations, func(su *setup) {
		su.config[FieldVMIDMin] = lo
		su.config[FieldVMIDMax] = hi
	})
	keys := collidingKeys(4, lo, hi)
	ids := make([]string, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := e.client.Create(context.Background(), e.call(key), spec(key))
			if err != nil {
				t.Errorf("create %s: %v", key, err)
				return
			}
			ids[i] = m.ID
		}()
	}
	wg.Wait()
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != 4 || len(e.machines()) != 4 {
		t.Fatalf("VMIDs %v and %d machines, want 4 distinct", ids, len(e.machines()))
	}
}

// collidingKeys finds n keys whose slot in [lo, hi] is the same.
func collidingKeys(n, lo, hi int) []string {
	bySlot := map[int][]string{}
	for i := 0; ; i++ {
		key := fmt.Sprintf("inst_k%d", i)
		slot := keySlot(key, lo, hi)
		bySlot[slot] = append(bySlot[slot], key)
		if len(bySlot[slot]) == n {
			return bySlot[slot]
		}
	}
}

// Field failure 4: the clone task fails on a storage lock timeout and PVE
// removes the target: PROVIDER_ERROR with the exit status; a retry with
// the same key succeeds in the same slot.
func TestFieldCloneTaskFails(t *testing.T) {
	e := newEnv(t, withDurations)
	e.emu.FailNextTask("qmclone", emulator.ExitStorageLockTimeout)
	_, err := e.client.Create(context.Background(), e.call("inst_lock"), spec("inst_lock"))
	providertest.WantProviderError(t, err, http.StatusOK, emulator.ExitStorageLockTimeout)
	if ms := e.machines(); len(ms) != 0 {
		t.Fatalf("after the failed clone: %+v, want none", ms)
	}
	m := e.create(t, "inst_lock")
	if want := strconv.Itoa(probeSlots("inst_lock", DefaultVMIDMin, DefaultVMIDMax)[0]); m.ID != want {
		t.Fatalf("retry made VM %s, want slot %s", m.ID, want)
	}
	if got := e.mustGet(t, m.ID); got == nil || got.State != api.StateRunning {
		t.Fatalf("get = %+v, want running", got)
	}
}

// Field failure 5: a start task ending "WARNINGS: 1" is a success, and
// nothing starts the VM again.
func TestFieldStartWarnings(t *testing.T) {
	e := newEnv(t, withDurations)
	e.emu.WarnNextTask("qmstart", 1)
	m := e.create(t, "inst_warn")
	if got := e.mustGet(t, m.ID); got == nil || got.State != api.StateRunning {
		t.Fatalf("get = %+v, want running", got)
	}
	if again := e.create(t, "inst_warn"); again.ID != m.ID {
		t.Fatalf("retry made %s, want %s", again.ID, m.ID)
	}
	if n := e.emu.Calls(emulator.RouteStart); n != 1 {
		t.Fatalf("%d start requests, want 1 (the retry of the create starts nothing)", n)
	}
}

// Field failure 6: the guest agent is not running: the VM is running with
// no addresses, and get does not fail. A template without the agent
// enabled is not even asked.
func TestFieldAgentNotRunning(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_noagent")
	vmid, _ := strconv.Atoi(m.ID)
	if err := e.emu.SetAgentRunning(vmid, false); err != nil {
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	got := e.mustGet(t, m.ID)
	if got == nil || got.State != api.StateRunning || got.Addresses == nil || len(got.Addresses) != 0 {
		t.Fatalf("get = %+v, want running with no addresses", got)
	}
	if n := e.emu.Calls(emulator.RouteAgentInterfaces); n != 1 {
		t.Fatalf("%d agent requests, want 1", n)
	}

	other, err := e.client.Create(context.Background(), e.call("inst_noagent2"), api.MachineSpec{Name: "x", OfferID: testOffer, Image: testTemplate})
	if err != nil {
		t.Fatal(err)
	}
	otherID, _ := strconv.Atoi(other.ID)
	if err := e.emu.SetAgentInterfaces(otherID, []emulator.AgentInterface{{Name: "eth0", Addresses: []emulator.AgentAddress{
		{IP: "fe80::1", Type: "ipv6"}, {IP: "2001:db8::5", Type: "ipv6"}, {IP: "192.0.2.7", Type: "ipv4"}, {IP: "127.0.0.1", Type: "ipv4"}}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.mustGet(t, other.ID); strings.Join(got.Addresses, ",") != "192.0.2.7,2001:db8::5" {
		t.Fatalf("addresses = %v, want the global ones, IPv4 first", got.Addresses)
	}
}

// Field failure 7: tags written as "Prod,Better-Compute" or
// "a;better-compute" make the VM ours (PVE compares tags without case).
func TestFieldTagSpellings(t *testing.T) {
	e := newEnv(t)
	for i, tags := range []string{"Prod,Better-Compute", "a;better-compute", "BETTER-COMPUTE web"} {
		vmid := 10100 + i
		e.seed(t, tags, ManagedDescription(fmt.Sprintf("inst_tag%d", i), testOffer), vmid)
		id := strconv.Itoa(vmid)
		if got := e.mustGet(t, id); got == nil || got.State != api.StateRunning {
			t.Fatalf("tags %q: get = %+v, want our running VM", tags, got)
		}
		if err := e.client.Power(context.Background(), e.call(""), id, api.ActionOff); err != nil {
			t.Fatalf("tags %q: power off: %v", tags, err)
		}
		if e.vm(t, vmid).Status != emulator.StatusStopped {
			t.Fatalf("tags %q: VM still runs", tags)
		}
	}
	items, _, err := e.client.List(context.Background(), e.call(""), "", 10)
	if err != nil || len(items) != 3 {
		t.Fatalf("list = %v, %v; want the 3 VMs", items, err)
	}
}

// holdClone forwards every request; once armed, the reply to the first
// POST …/clone is held (PVE accepted it: the clone task runs) until
// released.
type holdClone struct {
	base     http.RoundTripper
	mu       sync.Mutex
	armed    bool
	held     chan struct{}
	released chan struct{}
}

func (h *holdClone) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(r)
	h.mu.Lock()
	hold := h.armed && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/clone")
	if hold {
		h.armed = false
	}
	h.mu.Unlock()
	if hold {
		close(h.held)
		<-h.released
	}
	return resp, err
}

// A create for a key whose VM is being re-cloned (a reinstall) in a later
// slot, with an earlier slot of the key free again, waits for that clone
// and answers that VM: never a second VM for the key.
func TestFieldCreateDuringReinstallFindsTheVM(t *testing.T) {
	hc := &holdClone{held: make(chan struct{}), released: make(chan struct{})}
	e := newEnv(t, withDurations, func(su *setup) {
		su.config[FieldCACert] = nil
		su.options = append(su.options, WithHTTPClient(&http.Client{Transport: hc}))
	})
	hc.base = pinnedTransport(t, e.srv)
	const key = "inst_reinstalled"
	slots := probeSlots(key, DefaultVMIDMin, DefaultVMIDMax)
	e.seed(t, ManagedTag, ManagedDescription("inst_first", testOffer), slots[0])
	m := e.create(t, key)
	if m.ID != strconv.Itoa(slots[1]) {
		t.Fatalf("created in %s, want the second slot %d", m.ID, slots[1])
	}
	if err := e.emu.DeleteVM(slots[0]); err != nil { // the first slot is free again
		t.Fatal(err)
	}

	hc.mu.Lock()
	hc.armed = true
	hc.mu.Unlock()
	reinstalled := make(chan error, 1)
	go func() {
		_, err := e.client.Reinstall(context.Background(), e.call(key), m.ID, testTemplate2)
		reinstalled <- err
	}()
	<-hc.held // the VM was destroyed and the clone into its VMID runs
	again, err := e.client.Create(context.Background(), e.call(key), spec(key))
	close(hc.released)
	if err != nil {
		t.Fatalf("create during the reinstall: %v", err)
	}
	if err := <-reinstalled; err != nil {
		t.Fatalf("reinstall: %v", err)
	}
	var withKey []int
	for _, v := range e.machines() {
		if k, _ := descriptionValue(v.Description, keyLinePrefix); k == key {
			withKey = append(withKey, v.VMID)
		}
	}
	if again.ID != m.ID || len(withKey) != 1 {
		t.Fatalf("create during the reinstall answered VM %s; VMs carrying the key: %v; want only %s", again.ID, withKey, m.ID)
	}
}

// pinnedTransport trusts only the emulator's CA.
func pinnedTransport(t testing.TB, srv *emulator.Server) *http.Transport {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(srv.CACertPEM()) {
		t.Fatal("emulator CA does not parse")
	}
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
}
