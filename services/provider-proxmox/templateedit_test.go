package proxmox

import (
	"reflect"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// sameAsGet fails t when the create's answer differs from a get right after
// it (the reconciler takes an answer other than pending and does no get;
// after a pending one it gets, so only the state may differ then).
func sameAsGet(t *testing.T, e *env, what string, created *api.ExternalMachine) {
	t.Helper()
	got := e.mustGet(t, created.ID)
	if created.State == api.StatePending {
		got.State = api.StatePending
	}
	if !reflect.DeepEqual(created, got) {
		t.Errorf("%s: create answered\n  %+v\nget says\n  %+v", what, created, got)
	}
}

// The template's agent is turned off (qm set --agent 0: not in the cluster
// list) after its config was cached: the clone has no agent; what does the
// create answer?
func TestTemplateAgentOffAfterCache(t *testing.T) {
	e := newEnv(t)
	sameAsGet(t, e, "first create", e.create(t, "inst_a1"))
	e.editTemplate(t, map[string]any{"agent": "0"})
	m := e.create(t, "inst_a2")
	v := e.vm(t, mustAtoi(t, m.ID))
	t.Logf("clone agent=%q; create answered state %s pending %v addrs %v", v.Config["agent"], m.State, m.AddressesPending, m.Addresses)
	sameAsGet(t, e, "create after agent off", m)
	if m.State != api.StatePending {
		t.Errorf("the clone has no agent: create answered %s, want pending (the reconciler gets)", m.State)
	}
	// The entry is dropped: the next create reads the template's config.
	nextCreateReadsTheTemplate(t, e, "inst_a3")
}

// nextCreateReadsTheTemplate creates key's machine and wants the create to
// have read the template's config once (its cache entry was dropped) and
// to answer as a get does.
func nextCreateReadsTheTemplate(t *testing.T, e *env, key string) {
	t.Helper()
	e.emu.ResetCalls()
	next := e.create(t, key)
	if n := e.templateReads(); n != 1 {
		t.Errorf("the create after the entry was dropped read the template's config %d times, want 1", n)
	}
	sameAsGet(t, e, "create after the entry was dropped", next)
}

// The template's net0 model is changed (virtio -> e1000, not in the list)
// after its config was cached: the clone copies e1000, and configure, from
// the cached config, must not write net0 back to virtio.
func TestTemplateNICEditAfterCache(t *testing.T) {
	e := newEnv(t)
	e.create(t, "inst_n1")
	tpl := e.vm(t, testTemplateID)
	e.editTemplate(t, map[string]any{"net0": "e1000,bridge=vmbr0"})
	t.Logf("template net0 after the edit %q", e.vm(t, testTemplateID).Config["net0"])
	m := e.create(t, "inst_n2")
	v := e.vm(t, mustAtoi(t, m.ID))
	c := newEnv(t)
	c.editTemplate(t, map[string]any{"net0": "e1000,bridge=vmbr0"})
	cm := c.create(t, "inst_n3")
	t.Logf("control (no cache): clone net0 %q", c.vm(t, mustAtoi(t, cm.ID)).Config["net0"])
	t.Logf("template net0 before %q; clone net0 %q", tpl.Config["net0"], v.Config["net0"])
	if len(v.Config["net0"]) < 5 || v.Config["net0"][:5] != "e1000" {
		t.Errorf("template edited to net0 e1000, the machine made from it has net0 %q (a cached config's model written back)", v.Config["net0"])
	}

	// A pool with a VLAN has net0 written: the create reads the template's
	// config (the cache would have the old model and firewall), and the
	// machine keeps the edit with the pool's tag.
	e.editTemplate(t, map[string]any{"net0": "e1000,bridge=vmbr0,mtu=1400"})
	sp := spec("inst_n4")
	sp.Network = &api.PoolNetwork{VLAN: 42}
	e.emu.ResetCalls()
	pm, err := e.client.Create(t.Context(), e.call("inst_n4"), sp)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.templateReads(); n != 1 {
		t.Errorf("a create with the pool's VLAN read the template's config %d times, want 1", n)
	}
	net0 := e.vm(t, mustAtoi(t, pm.ID)).Config["net0"]
	if !strings.HasPrefix(net0, "e1000=") || !strings.Contains(net0, ",mtu=1400") || !strings.HasSuffix(net0, ",tag=42") {
		t.Errorf("template net0 e1000 with mtu 1400, pool VLAN 42: the machine has net0 %q", net0)
	}
}

// The template is destroyed and its VMID given to a rebuilt template of the
// same name, sizes and tags (an operator's image refresh) whose agent is off
// and whose disk is on another storage.
func TestTemplateVMIDReused(t *testing.T) {
	e := newEnv(t)
	sameAsGet(t, e, "first create", e.create(t, "inst_r1"))
	if err := e.emu.DeleteVM(testTemplateID); err != nil {
		t.Fatal(err)
	}
	tpl := testTemplates()[0]
	tpl.Config = map[string]string{"ipconfig0": "ip=dhcp", "agent": "0"}
	e.emu.ResetCalls()
	if err := e.emu.AddTemplate(tpl); err != nil {
		t.Fatal(err)
	}
	m, err := e.client.Create(t.Context(), e.call("inst_r2"), spec("inst_r2"))
	if err != nil {
		t.Fatalf("create from the rebuilt template: %v", err)
	}
	reads := e.templateReads()
	v := e.vm(t, mustAtoi(t, m.ID))
	t.Logf("clone agent=%q cicustom=%q; create answered state %s pending %v", v.Config["agent"], v.Config["cicustom"], m.State, m.AddressesPending)
	sameAsGet(t, e, "create from the rebuilt template", m)
	if n := reads; n != 0 || m.State != api.StatePending {
		t.Errorf("create from the rebuilt template (listed as the old one) read its config %d times and answered %s; want 0 (the entry serves) and pending (the clone has no agent)", n, m.State)
	}
	nextCreateReadsTheTemplate(t, e, "inst_r3")
}

// On an account whose bridge is not the template's, every create has net0
// written, so none uses the cached config: each reads the template's, and
// the machine keeps the template's other net0 parts on the account's
// bridge.
func TestTemplateCacheNotUsedWhenNet0Changes(t *testing.T) {
	e := newEnv(t, func(su *setup) {
		su.config[FieldBridge] = "vmbr1"
		su.emu.Nodes = []emulator.Node{{Name: testNode, CPUs: 64, MemoryBytes: 1 << 40, Bridges: []string{"vmbr0", "vmbr1"}}}
	})
	e.create(t, "inst_b1")
	e.editTemplate(t, map[string]any{"net0": "e1000,bridge=vmbr0,firewall=1"})
	e.emu.ResetCalls()
	m := e.create(t, "inst_b2")
	if n := e.templateReads(); n != 1 {
		t.Errorf("a create that rewrites net0's bridge read the template's config %d times, want 1", n)
	}
	net0 := e.vm(t, mustAtoi(t, m.ID)).Config["net0"]
	if !strings.HasPrefix(net0, "e1000=") || !strings.Contains(net0, ",bridge=vmbr1") || !strings.Contains(net0, ",firewall=1") {
		t.Errorf("template net0 e1000 with firewall on vmbr0, account bridge vmbr1: the machine has net0 %q", net0)
	}
}
