package proxmox

import (
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/sshemu"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// editTemplate sets keys of the Ubuntu template's config out of band (qm
// set on a template: PVE allows it), as an operator would.
func (e *env) editTemplate(t testing.TB, params map[string]any) {
	t.Helper()
	s, err := e.client.open(t.Context(), e.call(""), "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.put(t.Context(), qemuPath(testNode, testTemplateID)+"/config", params); err != nil {
		t.Fatalf("edit the template: %v", err)
	}
}

// templateReads counts the GET …/config of the Ubuntu template the last
// create sent (every other config read in these creates is none: fresh
// clones' configs are derived).
func (e *env) templateReads() int { return e.emu.Calls(emulator.RouteConfigGet) }

// A template's config read by one create serves the account's next ones
// (templateCache) while the cluster list shows the template unchanged, for
// at most templateCacheAge, and not after a clone from it failed; a create
// from the cached config writes every key it manages, so a template edit
// the list does not show (ipconfig0) does not reach the machine.
func TestTemplateConfigCached(t *testing.T) {
	e := newEnv(t)
	step := func(key string, wantReads int) emulator.VMSnapshot {
		t.Helper()
		e.emu.ResetCalls()
		m := e.create(t, key)
		if n := e.templateReads(); n != wantReads {
			t.Errorf("create %s read the template's config %d times, want %d", key, n, wantReads)
		}
		return e.vm(t, mustAtoi(t, m.ID))
	}
	step("inst_tc_1", 1)
	step("inst_tc_2", 0)

	// An edit the list does not show: the cached config is used, and the
	// machine still gets the ipconfig0 it asks for (DHCP), not the edit.
	e.editTemplate(t, map[string]any{"ipconfig0": "ip=192.0.2.10/24,gw=192.0.2.1"})
	if v := step("inst_tc_3", 0); v.Config["ipconfig0"] != ipDHCP || v.Config["cores"] != "2" || v.Config["memory"] != "4096" {
		t.Errorf("a create from the cached config left ipconfig0 %q, cores %q, memory %q; want %q, 2, 4096",
			v.Config["ipconfig0"], v.Config["cores"], v.Config["memory"], ipDHCP)
	}

	// Tags are current in the list: an edit of them is read at once, and
	// the machine carries the new tag.
	e.editTemplate(t, map[string]any{"tags": "base;golden"})
	if v := step("inst_tc_4", 1); v.Config["tags"] != "base;better-compute;golden" {
		t.Errorf("after a tag edit the machine has tags %q, want base;better-compute;golden", v.Config["tags"])
	}
	step("inst_tc_5", 0)

	// Aged out.
	e.clock.Advance(templateCacheAge)
	step("inst_tc_6", 1)

	// A failed clone drops the entry: the retry reads the template again.
	e.emu.FailNextTask("qmclone", "clone failed: storage full")
	if _, err := e.client.Create(t.Context(), e.call("inst_tc_7"), spec("inst_tc_7")); err == nil {
		t.Fatal("the create whose clone failed succeeded")
	}
	step("inst_tc_7", 1)
}

// A create answers a DHCP VM whose guest agent answers running, exactly as
// a get right after it reports it (addresses and the emulator's SSH
// endpoint included), so the reconciler needs no look; one whose agent is
// not up yet running with its addresses pending; a VM with a static
// address pending (the reconciler's get reports it).
func TestCreateAnswersAsGet(t *testing.T) {
	fleet := sshemu.NewFleet(zerolog.Nop())
	t.Cleanup(fleet.Close)
	e := newEnv(t, func(su *setup) { su.emu.SSH = fleet })
	created := e.create(t, "inst_ans")
	if got := e.mustGet(t, created.ID); !reflect.DeepEqual(created, got) || created.State != api.StateRunning ||
		len(created.Addresses) != 1 || created.SSHEndpoint == "" {
		t.Errorf("create answered\n  %+v\nget says\n  %+v\nwant the same, running, with an address and an SSH endpoint", created, got)
	}

	late := newEnv(t, func(su *setup) { su.emu.SSH, su.emu.AgentStartDelay = fleet, time.Minute })
	m := late.create(t, "inst_late")
	if m.State != api.StateRunning || !m.AddressesPending || len(m.Addresses) != 0 || m.SSHEndpoint != "" {
		t.Errorf("with the agent not up, create answered %+v; want running, addresses pending, none, no SSH endpoint", m)
	}

	sp := spec("inst_static_ans")
	sp.Address = &api.StaticAddress{Address: "172.16.5.9/24", Gateway: "172.16.5.1"}
	st, err := e.client.Create(t.Context(), e.call("inst_static_ans"), sp)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != api.StatePending || st.ID == "" {
		t.Errorf("static VM: create answered %+v, want pending", st)
	}
}
