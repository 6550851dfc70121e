package proxmox

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// withStaleList makes pvestatd report only when the test says so
// (RefreshStats): /cluster/resources keeps what the last round saw.
func withStaleList(su *setup) { su.emu.StatsInterval = time.Hour }

// vmsWithKey are the VMIDs of the emulator's VMs whose description holds key.
func (e *env) vmsWithKey(key string) []int {
	var out []int
	for _, v := range e.machines() {
		if k, _ := descriptionValue(v.Description, keyLinePrefix); k == key {
			out = append(out, v.VMID)
		}
	}
	return out
}

// Issue 11, item 1: the key's first slot held a template or another VM
// moments ago; the first create cloned into it and failed later; the
// retry sees the old occupant in the stale cluster list (its name,
// template flag and status) and must still find its own clone there, by
// the clone's config. Through the bus: one VM for the key, running, and
// the delete leaves none.
func TestStaleClusterListRetriedCreateMakesOneVM(t *testing.T) {
	const key = "inst_reuse"
	cases := []struct {
		name string
		// occupy puts the old occupant in vmid.
		occupy func(t *testing.T, e *env, vmid int)
		// fault fails the first create after its clone.
		fault string
	}{
		{"old template", func(t *testing.T, e *env, vmid int) {
			if err := e.emu.AddTemplate(emulator.Template{VMID: vmid, Name: "old-template"}); err != nil {
				t.Fatal(err)
			}
		}, emulator.RouteConfigPut},
		{"old VM of another name", func(t *testing.T, e *env, vmid int) {
			e.seed(t, ManagedTag, ManagedDescription("inst_gone", testOffer), vmid)
		}, emulator.RouteConfigPut},
		{"old running VM of the same name", func(t *testing.T, e *env, vmid int) {
			_, err := e.emu.SeedVMs(emulator.SeedSpec{Count: 1, FirstVMID: vmid, Tags: ManagedTag, Running: true,
				Description: ManagedDescription("inst_gone", testOffer), Config: map[string]string{"name": vmName(key)}})
			if err != nil {
				t.Fatal(err)
			}
		}, emulator.RouteStart},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withStaleList)
			r := providertest.Serve(t, e.def, e.clock, testSecrets)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			slot := probeSlots(key, DefaultVMIDMin, DefaultVMIDMax)[0]
			tc.occupy(t, e, slot)
			e.emu.RefreshStats() // pvestatd reports the old occupant
			if err := e.emu.DeleteVM(slot); err != nil {
				t.Fatal(err)
			}

			e.emu.InjectRouteFault(emulator.RouteFault{Route: tc.fault, Status: http.StatusInternalServerError, Message: "got timeout"})
			if _, err := r.Create(ctx, e.acct, key, spec(key)); err == nil {
				t.Fatal("the first create succeeded despite the fault")
			}
			if got := e.vmsWithKey(key); len(got) != 1 || got[0] != slot {
				t.Fatalf("after the failed first create, VMs with the key: %v, want [%d]", got, slot)
			}
			m, err := r.Create(ctx, e.acct, key, spec(key))
			if err != nil {
				t.Fatalf("retried create: %v", err)
			}
			if got := e.vmsWithKey(key); len(got) != 1 || m.ID != strconv.Itoa(slot) {
				t.Fatalf("the retry answered VM %s; VMs with the key: %v; want only %d", m.ID, got, slot)
			}
			if v := e.vm(t, slot); v.Status != emulator.StatusRunning || !hasManagedTag(v.Config["tags"]) {
				t.Fatalf("VM %d after the retry: status %s, tags %q; want running with the %s tag", slot, v.Status, v.Config["tags"], ManagedTag)
			}

			if page, err := r.List(ctx, e.acct, "", 0); err != nil || len(page.Items) != 1 || page.Items[0].ID != m.ID {
				t.Fatalf("list = %+v, %v; want VM %s (the list's template flag is its old occupant's)", page, err, m.ID)
			}
			if err := r.Delete(ctx, e.acct, m.ID); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if got := e.vmsWithKey(key); len(got) != 0 {
				t.Fatalf("after the delete, VMs still carrying the key: %v", got)
			}
		})
	}
}

// The list may name a template that no longer is one (its VMID reused by
// a VM moments ago): create confirms the template by its config and
// answers a retryable PROVIDER_ERROR instead of cloning a VM's disk.
func TestStaleClusterListTemplateConfirmedByConfig(t *testing.T) {
	e := newEnv(t, withStaleList)
	if err := e.emu.DeleteVM(testTemplateID); err != nil {
		t.Fatal(err)
	}
	e.seed(t, "", "someone's VM", testTemplateID)
	e.emu.ResetCalls()
	_, err := e.client.Create(context.Background(), e.call("inst_tpl"), spec("inst_tpl"))
	providertest.WantProviderError(t, err, 0, codeStaleClusterList)
	if n := e.emu.Calls(emulator.RouteClone); n != 0 || len(e.machines()) != 1 {
		t.Fatalf("%d clones, machines %+v; want none cloned", n, e.machines())
	}
	e.emu.RefreshStats()
	_, err = e.client.Create(context.Background(), e.call("inst_tpl"), spec("inst_tpl"))
	providertest.WantCode(t, err, api.CodeInvalidInput)

	// A template made moments ago (not yet reported: no template flag in
	// the list), named by its VMID, is one by its config.
	const fresh = 9100
	if _, err := e.emu.SeedVMs(emulator.SeedSpec{Count: 1, FirstVMID: fresh, Config: map[string]string{"template": "1"}}); err != nil {
		t.Fatal(err)
	}
	m, err := e.client.Create(context.Background(), e.call("inst_fresh"), api.MachineSpec{Name: "fresh", OfferID: testOffer, Image: strconv.Itoa(fresh)})
	if err != nil || len(e.vmsWithKey("inst_fresh")) != 1 {
		t.Fatalf("create from the fresh template %d: %+v, %v", fresh, m, err)
	}
}

// A template made moments ago and named by its name (the list shows it
// with no name and status unknown until pvestatd reports it) is found by
// its config, not refused for good as an unknown image.
func TestStaleClusterListFreshTemplateByName(t *testing.T) {
	e := newEnv(t, withStaleList)
	e.emu.RefreshStats()
	if err := e.emu.AddTemplate(emulator.Template{VMID: 9100, Name: "fresh", DiskGiB: 10, Cores: 1, MemoryMiB: 1024}); err != nil {
		t.Fatal(err)
	}
	m, err := e.client.Create(context.Background(), e.call("inst_fresh"), api.MachineSpec{Name: "fresh-1", OfferID: testOffer, Image: "fresh"})
	if err != nil || len(e.vmsWithKey("inst_fresh")) != 1 {
		t.Fatalf("create from the fresh template by name: %+v, %v", m, err)
	}
}
