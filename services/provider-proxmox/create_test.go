package proxmox

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

func TestCreateConfiguresVM(t *testing.T) {
	e := newEnv(t)
	keys := []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB0 ops@example"}
	m, err := e.client.Create(context.Background(), e.call("inst_cfg"), api.MachineSpec{
		Name: "inst_CFG", OfferID: testOffer, Image: strconv.Itoa(testTemplateID), UserData: "#!/bin/sh\necho hi\n", SSHKeys: keys,
	})
	if err != nil {
		t.Fatal(err)
	}
	vmid, _ := strconv.Atoi(m.ID)
	if want := probeSlots("inst_cfg", DefaultVMIDMin, DefaultVMIDMax)[0]; vmid != want {
		t.Fatalf("VMID %d, want the key's slot %d", vmid, want)
	}
	if m.State != api.StateRunning || m.Name != "inst-cfg" || m.OfferID != testOffer || m.Region != DefaultRegion {
		t.Fatalf("create answered %+v", m)
	}
	v := e.vm(t, vmid)
	vol := "local:snippets/" + snippetName(vmid, "inst_cfg")
	checks := map[string]string{
		"name":      "inst-cfg",
		"cores":     "2",
		"memory":    "4096",
		"ipconfig0": "ip=dhcp",
		"cicustom":  "user=" + vol + ",network=local:snippets/net.yaml",
		"tags":      "base;better-compute",
		"scsi0":     "local-lvm:vm-" + m.ID + "-disk-0,size=20G",
	}
	for k, want := range checks {
		if got := v.Config[k]; got != want {
			t.Errorf("config %s = %q, want %q", k, got, want)
		}
	}
	if v.Status != emulator.StatusRunning {
		t.Errorf("VM is %s, want running", v.Status)
	}
	if key, ok := descriptionValue(v.Description, keyLinePrefix); !ok || key != "inst_cfg" {
		t.Errorf("description %q does not record the key", v.Description)
	}
	if ud, ok := e.snippets.File(vol); !ok || !strings.Contains(ud, "text/cloud-config") ||
		!strings.Contains(ud, "  - '"+keys[0]+"'") || !strings.Contains(ud, "#!/bin/sh\necho hi\n") {
		t.Errorf("snippet %s = %q, %v; want the user data with the SSH keys", vol, ud, ok)
	}
	got := e.mustGet(t, m.ID)
	if got == nil || got.State != api.StateRunning || got.Name != "inst-cfg" || got.OfferID != testOffer ||
		strings.Join(got.Addresses, ",") != "10.0."+strconv.Itoa(vmid>>8&255)+"."+strconv.Itoa(vmid&255) {
		t.Fatalf("get = %+v, want running with the agent's address", got)
	}
	if !reflect.DeepEqual(m, got) {
		t.Errorf("create answered %+v, the get right after %+v: want the same", m, got)
	}
}

func TestCreateRetryIsIdempotent(t *testing.T) {
	e := newEnv(t)
	first := e.create(t, "inst_retry")
	e.emu.ResetCalls()
	again := e.create(t, "inst_retry")
	if again.ID != first.ID || len(e.machines()) != 1 {
		t.Fatalf("retry made %s (first %s), %d machines", again.ID, first.ID, len(e.machines()))
	}
	for _, route := range []string{emulator.RouteClone, emulator.RouteConfigPut, emulator.RouteResize, emulator.RouteStart} {
		if n := e.emu.Calls(route); n != 0 {
			t.Errorf("the retry of a finished create called %s %d times", route, n)
		}
	}
	if n := e.calls(); n != 4 {
		t.Errorf("the retry took %d requests, want 4 (cluster list, the slot's config, and its status: the list says running, which may be an earlier occupant's; the agent's addresses, answered with it running)", n)
	}
}

func TestCreateFinishesInterruptedConfiguration(t *testing.T) {
	e := newEnv(t)
	e.emu.InjectRouteFault(emulator.RouteFault{Route: emulator.RouteConfigPut, Status: http.StatusInternalServerError, Message: "got timeout"})
	_, err := e.client.Create(context.Background(), e.call("inst_half"), spec("inst_half"))
	providertest.WantProviderError(t, err, http.StatusInternalServerError, string(kindAPI))
	half := e.machines()
	if len(half) != 1 || hasManagedTag(strings.Join(half[0].Tags, ";")) || half[0].Status != emulator.StatusStopped {
		t.Fatalf("after the failed configuration: %+v, want one untagged stopped clone", half)
	}
	e.emu.ResetCalls()
	m := e.create(t, "inst_half")
	if m.ID != strconv.Itoa(half[0].VMID) || e.emu.Calls(emulator.RouteClone) != 0 {
		t.Fatalf("the retry made %s with %d clones, want the clone %d finished", m.ID, e.emu.Calls(emulator.RouteClone), half[0].VMID)
	}
	v := e.vm(t, half[0].VMID)
	if !hasManagedTag(strings.Join(v.Tags, ";")) || v.Status != emulator.StatusRunning || v.DiskGiB != 20 {
		t.Fatalf("finished VM = %+v", v)
	}
}

func TestCreateRefusals(t *testing.T) {
	e := newEnv(t)
	noWriter := Definition()
	c, err := noWriter.New(provider.BuildContext{Account: e.acct})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		client provider.Client
		spec   api.MachineSpec
		code   api.Code
		path   string
	}{
		{"unknown offer", e.client, api.MachineSpec{Name: "a", OfferID: "huge", Image: testTemplate}, api.CodeInvalidInput, "machine.offerId"},
		{"other region", e.client, api.MachineSpec{Name: "a", OfferID: testOffer, Image: testTemplate, Region: "pve9"}, api.CodeInvalidInput, "machine.region"},
		{"user data without writer", c, api.MachineSpec{Name: "a", OfferID: testOffer, Image: testTemplate, UserData: "#cloud-config\n"}, api.CodeInvalidConfig, "options.snippetWriter"},
		{"ssh keys without writer", c, api.MachineSpec{Name: "a", OfferID: testOffer, Image: testTemplate, SSHKeys: []string{"ssh-ed25519 AAAA x"}}, api.CodeInvalidConfig, "options.snippetWriter"},
		{"unknown image", e.client, api.MachineSpec{Name: "a", OfferID: testOffer, Image: "arch"}, api.CodeInvalidInput, "machine.image"},
		{"not a template", e.client, api.MachineSpec{Name: "a", OfferID: testOffer, Image: "12345"}, api.CodeInvalidInput, "machine.image"},
	}
	for _, tc := range cases {
		e.emu.ResetCalls()
		_, err := tc.client.Create(context.Background(), e.call("inst_refused"), tc.spec)
		if ce := providertest.WantCode(t, err, tc.code); ce.Path() != tc.path {
			t.Errorf("%s: path %q, want %q", tc.name, ce.Path(), tc.path)
		}
		if tc.code != api.CodeInvalidInput || tc.path != "machine.image" {
			if n := e.calls(); n != 0 {
				t.Errorf("%s: %d API requests, want none", tc.name, n)
			}
		}
	}
	if len(e.machines()) != 0 {
		t.Fatalf("refused creates made %v", e.machines())
	}
}

func TestCreateAmbiguousTemplateName(t *testing.T) {
	e := newEnv(t)
	if err := e.emu.AddTemplate(emulator.Template{VMID: 9100, Name: testTemplate}); err != nil {
		t.Fatal(err)
	}
	_, err := e.client.Create(context.Background(), e.call("inst_amb"), spec("inst_amb"))
	if ce := providertest.WantCode(t, err, api.CodeInvalidInput); !strings.Contains(ce.Message, "[9000 9100]") {
		t.Fatalf("message %q does not name both templates", ce.Message)
	}
}

// TestCreateTagsLast: the better-compute tag is the last change a create
// makes, after configuration, resize and start succeed. A create that ends
// at any step before (as a crash there would leave the clone) leaves a
// clone that list does not show and get answers absent; the retry with the
// key finds the clone by the key in its description, finishes it and
// tags it: one VM, running, listed once.
func TestCreateTagsLast(t *testing.T) {
	cases := []struct {
		name  string
		fault func(*emulator.Emulator)
	}{
		{"config refused", func(emu *emulator.Emulator) {
			emu.InjectRouteFault(emulator.RouteFault{Route: emulator.RouteConfigPut, Message: "got timeout"})
		}},
		{"resize refused", func(emu *emulator.Emulator) {
			emu.InjectRouteFault(emulator.RouteFault{Route: emulator.RouteResize, Message: "got timeout"})
		}},
		{"start refused", func(emu *emulator.Emulator) {
			emu.InjectRouteFault(emulator.RouteFault{Route: emulator.RouteStart, Message: "got timeout"})
		}},
		{"start task fails", func(emu *emulator.Emulator) {
			emu.InjectTaskFault(emulator.TaskFault{Type: "qmstart", ExitStatus: "start failed: QEMU exited with code 1"})
		}},
		{"tag refused after start", func(emu *emulator.Emulator) {
			// The first PUT …/config is the configuration, the second the tag.
			emu.InjectRouteFault(emulator.RouteFault{Route: emulator.RouteConfigPut, Skip: 1, Message: "got timeout"})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withDurations)
			tc.fault(e.emu)
			if _, err := e.client.Create(context.Background(), e.call("inst_last"), spec("inst_last")); err == nil {
				t.Fatal("create succeeded despite the fault")
			}
			half := e.machines()
			if len(half) != 1 || hasManagedTag(strings.Join(half[0].Tags, ";")) {
				t.Fatalf("after the failed step: %+v, want one untagged clone", half)
			}
			id := strconv.Itoa(half[0].VMID)
			if page := e.mustList(t); len(page) != 0 {
				t.Fatalf("list shows %+v while the clone is half made", page)
			}
			if got := e.mustGet(t, id); got != nil {
				t.Fatalf("get answers %+v for the half-made clone, want absent", got)
			}
			m := e.create(t, "inst_last")
			done := e.machines()
			if m.ID != id || len(done) != 1 || !hasManagedTag(strings.Join(done[0].Tags, ";")) || done[0].Status != emulator.StatusRunning {
				t.Fatalf("retry made %s; machines %+v; want the clone %s finished, tagged and running", m.ID, done, id)
			}
			if page := e.mustList(t); len(page) != 1 || page[0].ID != id {
				t.Fatalf("list after the retry = %+v, want only %s", page, id)
			}
		})
	}
}
