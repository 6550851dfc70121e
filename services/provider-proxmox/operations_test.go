package proxmox

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/egress"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

func TestPowerActions(t *testing.T) {
	e := newEnv(t, withDurations)
	m := e.create(t, "inst_power")
	vmid, _ := strconv.Atoi(m.ID)
	cases := []struct {
		action api.PowerAction
		routes map[string]int
		status string
	}{
		{api.ActionOff, map[string]int{emulator.RouteStop: 1}, emulator.StatusStopped},
		{api.ActionOff, map[string]int{emulator.RouteStop: 1}, emulator.StatusStopped}, // level: stopping a stopped VM is fine
		{api.ActionOn, map[string]int{emulator.RouteStart: 1}, emulator.StatusRunning},
		{api.ActionOn, map[string]int{emulator.RouteStart: 1}, emulator.StatusRunning}, // already running: success
		{api.ActionGracefulRestart, map[string]int{emulator.RouteReboot: 1}, emulator.StatusRunning},
		{api.ActionReset, map[string]int{emulator.RouteReset: 1}, emulator.StatusRunning},
		{api.ActionCycle, map[string]int{emulator.RouteStop: 1, emulator.RouteStart: 1}, emulator.StatusRunning},
		{api.ActionGracefulOff, map[string]int{emulator.RouteShutdown: 1}, emulator.StatusStopped},
	}
	for _, c := range cases {
		e.emu.ResetCalls()
		if err := e.client.Power(context.Background(), e.call(""), m.ID, c.action); err != nil {
			t.Fatalf("power %s: %v", c.action, err)
		}
		for route, want := range c.routes {
			if n := e.emu.Calls(route); n != want {
				t.Errorf("power %s: %d calls of %s, want %d", c.action, n, route, want)
			}
		}
		if got := e.vm(t, vmid).Status; got != c.status {
			t.Errorf("after power %s the VM is %s, want %s", c.action, got, c.status)
		}
	}
	// The VM is stopped now: reset and reboot cannot run.
	for _, action := range []api.PowerAction{api.ActionReset, api.ActionGracefulRestart} {
		err := e.client.Power(context.Background(), e.call(""), m.ID, action)
		providertest.WantCode(t, err, api.CodeInvalidState)
	}
	e.emu.ResetCalls()
	providertest.WantCode(t, e.client.Power(context.Background(), e.call(""), m.ID, api.ActionNMI), api.CodeUnsupported)
	if n := e.calls(); n != 0 {
		t.Fatalf("nmi sent %d requests", n)
	}
}

func TestPowerResetNeverRepeated(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_reset")
	e.emu.InjectRouteFault(emulator.RouteFault{Route: emulator.RouteReset, Status: http.StatusBadGateway, Message: "Bad Gateway"})
	e.emu.ResetCalls()
	err := e.client.Power(context.Background(), e.call(""), m.ID, api.ActionReset)
	providertest.WantProviderError(t, err, http.StatusBadGateway, string(kindAPI))
	if n := e.emu.Calls(emulator.RouteReset); n != 1 {
		t.Fatalf("reset sent %d times, want once", n)
	}
}

func TestTaskFailureAndTimeout(t *testing.T) {
	e := newEnv(t, withDurations)
	m := e.create(t, "inst_task")
	e.emu.FailNextTask("qmstop", "VM quit/powerdown failed - got timeout")
	err := e.client.Power(context.Background(), e.call(""), m.ID, api.ActionOff)
	providertest.WantProviderError(t, err, http.StatusOK, "VM quit/powerdown failed - got timeout")

	short := newEnv(t, func(su *setup) {
		su.options = append(su.options, WithTaskTimeout(5*time.Second), WithTaskPollInterval(time.Second))
	})
	sm := short.create(t, "inst_task2")
	short.emu.SetTaskDuration("qmshutdown", time.Minute)
	short.emu.ResetCalls()
	err = short.client.Power(context.Background(), short.call(""), sm.ID, api.ActionGracefulOff)
	providertest.WantProviderError(t, err, http.StatusOK, codeTaskTimeout)
	if n := short.emu.Calls(emulator.RouteTaskStatus); n != 5 {
		t.Fatalf("%d task polls in a 5 s timeout at 1 s, want 5", n)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	e := newEnv(t, withDurations)
	m := e.create(t, "inst_ctx")
	e.emu.SetTaskDuration("qmshutdown", time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	call := e.call("")
	call.Clock = blockingClock{e.clock}
	providertest.WantCode(t, e.client.Power(ctx, call, m.ID, api.ActionGracefulOff), api.CodeUnavailable)
}

// blockingClock never fires After: only the context ends a wait.
type blockingClock struct{ *clock.Fake }

func (blockingClock) After(time.Duration) <-chan time.Time { return nil }

func TestDeleteStopsAndPurges(t *testing.T) {
	e := newEnv(t, withDurations)
	m := e.create(t, "inst_del")
	e.emu.ResetCalls()
	if err := e.client.Delete(context.Background(), e.call(""), m.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.emu.VM(mustAtoi(t, m.ID)); ok {
		t.Fatal("the VM still exists")
	}
	if stops, dels := e.emu.Calls(emulator.RouteStop), e.emu.Calls(emulator.RouteDestroy); stops != 1 || dels != 2 {
		t.Fatalf("%d stops and %d DELETEs, want 1 and 2 (the first refused: running)", stops, dels)
	}
	if got := e.mustGet(t, m.ID); got != nil {
		t.Fatalf("get after delete = %+v", got)
	}
	providertest.WantCode(t, e.client.Delete(context.Background(), e.call(""), m.ID), api.CodeNotFound)
	for _, id := range []string{"", "abc", "99", "0100", "1000000000"} {
		if ce := providertest.WantCode(t, e.client.Delete(context.Background(), e.call(""), id), api.CodeInvalidInput); ce.Path() != "id" {
			t.Errorf("id %q: path %q", id, ce.Path())
		}
	}
}

// An operator's egress policy keeps an account's url from reaching other
// addresses: the emulator listens on loopback, outside 10.0.0.0/8.
func TestEgressPolicyRefusesOtherAddresses(t *testing.T) {
	policy, err := egress.Parse("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(su *setup) { su.options = append(su.options, WithEgressPolicy(policy)) })
	_, err = e.client.Get(context.Background(), e.call(""), "10001")
	if ce := providertest.WantCode(t, err, api.CodeAccessDenied); ce.Path() != "config."+FieldURL {
		t.Errorf("refused connection named %q, want config.%s", ce.Path(), FieldURL)
	}
	if n := e.calls(); n != 0 {
		t.Errorf("the emulator received %d requests, want 0", n)
	}
	loopback, _ := egress.Parse("127.0.0.0/8, ::1")
	allowed := newEnv(t, func(su *setup) { su.options = append(su.options, WithEgressPolicy(loopback)) })
	if _, err := allowed.client.ListOffers(context.Background(), allowed.call(""), api.OfferQuery{}); err != nil {
		t.Fatalf("an allowed cluster: %v", err)
	}
}

func TestForeignVMsUntouched(t *testing.T) {
	e := newEnv(t)
	e.seed(t, "prod", ManagedDescription("inst_x", testOffer), 10500) // no tag
	e.seed(t, ManagedTag, "a VM someone tagged by hand", 10501)       // no key
	for _, vmid := range []int{10500, 10501} {
		id := strconv.Itoa(vmid)
		if got := e.mustGet(t, id); got != nil {
			t.Errorf("get %s = %+v, want absent", id, got)
		}
		for name, op := range map[string]func() error{
			"delete": func() error { return e.client.Delete(context.Background(), e.call(""), id) },
			"power":  func() error { return e.client.Power(context.Background(), e.call(""), id, api.ActionOff) },
			"reinstall": func() error {
				_, err := e.client.Reinstall(context.Background(), e.call(""), id, testTemplate2)
				return err
			},
		} {
			providertest.WantCode(t, op(), api.CodeAccessDenied)
			if v := e.vm(t, vmid); v.Status != emulator.StatusRunning {
				t.Errorf("%s of foreign VM %d changed it: %+v", name, vmid, v)
			}
		}
	}
	for _, id := range []string{strconv.Itoa(testTemplateID), "12345"} {
		if got := e.mustGet(t, id); got != nil {
			t.Errorf("get %s = %+v, want absent", id, got)
		}
		providertest.WantCode(t, e.client.Power(context.Background(), e.call(""), id, api.ActionOn), api.CodeNotFound)
		_, err := e.client.Reinstall(context.Background(), e.call(""), id, testTemplate2)
		providertest.WantCode(t, err, api.CodeNotFound)
	}
}

// A VMID freed out of band and taken by another key's VM: a call expecting
// the first key reports the VM's real key, and delete, power and reinstall
// answer NOT_FOUND without touching it; a create with the first key makes a
// new VM elsewhere.
func TestReusedVMIDIsNotTheCallersVM(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_first")
	vmid := mustAtoi(t, m.ID)
	if m.IdempotencyKey != "inst_first" {
		t.Fatalf("create reported key %q", m.IdempotencyKey)
	}
	if err := e.emu.DeleteVM(vmid); err != nil {
		t.Fatal(err)
	}
	e.seed(t, ManagedTag, ManagedDescription("inst_second", testOffer), vmid)

	got, err := e.client.Get(context.Background(), e.call("inst_first"), m.ID)
	if err != nil || got == nil || got.IdempotencyKey != "inst_second" {
		t.Fatalf("get of the reused VMID = %+v, %v; want the VM reporting key inst_second", got, err)
	}
	for name, op := range map[string]func() error{
		"delete": func() error { return e.client.Delete(context.Background(), e.call("inst_first"), m.ID) },
		"power":  func() error { return e.client.Power(context.Background(), e.call("inst_first"), m.ID, api.ActionOff) },
		"reinstall": func() error {
			_, err := e.client.Reinstall(context.Background(), e.call("inst_first"), m.ID, testTemplate2)
			return err
		},
	} {
		providertest.WantCode(t, op(), api.CodeNotFound)
		if v := e.vm(t, vmid); v.Status != emulator.StatusRunning || !strings.Contains(v.Description, "inst_second") {
			t.Errorf("%s expecting inst_first changed inst_second's VM %d: %+v", name, vmid, v)
		}
	}
	again := e.create(t, "inst_first")
	if again.ID == m.ID || again.IdempotencyKey != "inst_first" {
		t.Fatalf("create after the reuse = %+v, want a new VM carrying inst_first", again)
	}
}

func TestReinstallKeepsIdentity(t *testing.T) {
	e := newEnv(t, withDurations)
	m, err := e.client.Create(context.Background(), e.call("inst_re"), api.MachineSpec{Name: "inst_re", OfferID: "large", Image: testTemplate, UserData: "#cloud-config\n"})
	if err != nil {
		t.Fatal(err)
	}
	vmid := mustAtoi(t, m.ID)
	before := e.vm(t, vmid)
	re, err := e.client.Reinstall(context.Background(), e.call(""), m.ID, strconv.Itoa(testTemplate2ID))
	if err != nil {
		t.Fatal(err)
	}
	after := e.vm(t, vmid)
	if re.ID != m.ID || re.Name != "inst-re" || re.OfferID != "large" {
		t.Fatalf("reinstall answered %+v", re)
	}
	same := []string{"name", "description", "cores", "memory", "tags"}
	for _, k := range same {
		if before.Config[k] != after.Config[k] {
			t.Errorf("%s changed: %q → %q", k, before.Config[k], after.Config[k])
		}
	}
	if after.DiskGiB != 80 || after.Status != emulator.StatusRunning || before.Config["net0"] == after.Config["net0"] {
		t.Errorf("after reinstall: %d GiB, %s, net0 %q (was %q); want 80 GiB, running, a new NIC", after.DiskGiB, after.Status, after.Config["net0"], before.Config["net0"])
	}
	if !strings.Contains(after.Config["cicustom"], "user=local:snippets/") || strings.Contains(after.Config["cicustom"], "net.yaml") {
		t.Errorf("cicustom %q: want the user volume kept on the Debian template", after.Config["cicustom"])
	}
	if got := e.mustGet(t, m.ID); got == nil || got.State != api.StateRunning {
		t.Fatalf("get = %+v, want running", got)
	}
	e.emu.ResetCalls()
	_, err = e.client.Reinstall(context.Background(), e.call(""), m.ID, "windows")
	if ce := providertest.WantCode(t, err, api.CodeInvalidInput); ce.Path() != "image" || e.emu.Calls(emulator.RouteDestroy) != 0 {
		t.Fatalf("unknown image: %v after %d DELETEs", err, e.emu.Calls(emulator.RouteDestroy))
	}
}

func TestListPages(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, e.create(t, fmt.Sprintf("inst_list%d", i)).ID)
	}
	e.seed(t, ManagedTag, "tagged by hand", 10600)                                   // no key
	e.seed(t, "web", ManagedDescription("inst_y", testOffer), 10601)                 // no tag
	e.seed(t, ManagedTag, ManagedDescription("inst_z", testOffer), 20001)            // another account's range
	e.seed(t, "BETTER-COMPUTE;x", ManagedDescription("inst_list_s", "large"), 10602) // ours, seeded
	ids = append(ids, "10602")
	items, pages := providertest.ListAll(t, e.client, e.call, 2, 10)
	var got []string
	for _, m := range items {
		if m.State != api.StateRunning || m.Region != DefaultRegion || m.OfferID == "" {
			t.Errorf("listed %+v", m)
		}
		got = append(got, m.ID)
	}
	want := strings.Join(sortedIDs(t, ids), ",")
	if strings.Join(got, ",") != want || pages != 3 {
		t.Fatalf("listed %v in %d pages, want %s in 3", got, pages, want)
	}
	_, _, err := e.client.List(context.Background(), e.call(""), "x", 2)
	if ce := providertest.WantCode(t, err, api.CodeInvalidInput); ce.Path() != "cursor" {
		t.Fatalf("bad cursor: %v", err)
	}
}

func TestOffers(t *testing.T) {
	e := newEnv(t)
	offers, err := e.client.ListOffers(context.Background(), e.call(""), api.OfferQuery{})
	if err != nil || len(offers) != 2 || !offers[0].Available || offers[0].ID != testOffer || offers[0].Vcpu != 2 ||
		offers[0].MemoryGiB != 4 || offers[0].DiskGiB != 20 || offers[0].Region != DefaultRegion || offers[0].Kind != api.KindVPS {
		t.Fatalf("offers = %+v, %v", offers, err)
	}
	if err := e.emu.SetNodeMemory(testNode, 16<<30); err != nil {
		t.Fatal(err)
	}
	offers, _ = e.client.ListOffers(context.Background(), e.call(""), api.OfferQuery{})
	if !offers[0].Available || offers[1].Available {
		t.Fatalf("with 16 GiB: %+v; want small available, large (32 GiB) not", offers)
	}
	e.emu.ResetCalls()
	for _, q := range []api.OfferQuery{{Region: "elsewhere"}, {Kind: api.KindMetal}, {GPUs: 1}, {MinVcpu: 9}} {
		if got, err := e.client.ListOffers(context.Background(), e.call(""), q); err != nil || len(got) != 0 {
			t.Errorf("query %+v: %v, %v; want none", q, got, err)
		}
	}
	if n := e.calls(); n != 0 {
		t.Errorf("queries no size matches sent %d requests", n)
	}

	pinned := newEnv(t, func(su *setup) {
		su.emu.Nodes = []emulator.Node{{Name: "pve1"}, {Name: "pve2", CPUs: 4}}
		su.config[FieldNode] = "pve2"
	})
	offers, _ = pinned.client.ListOffers(context.Background(), pinned.call(""), api.OfferQuery{Region: "pve2"})
	if len(offers) != 2 || !offers[0].Available || offers[1].Available || offers[0].Region != "pve2" {
		t.Fatalf("pinned to a 4-CPU node: %+v", offers)
	}
	if err := pinned.emu.SetNodeOnline("pve2", false); err != nil {
		t.Fatal(err)
	}
	offers, _ = pinned.client.ListOffers(context.Background(), pinned.call(""), api.OfferQuery{})
	if offers[0].Available {
		t.Fatalf("pinned node offline: %+v", offers)
	}
}

func TestPinnedNodeClonesThere(t *testing.T) {
	e := newEnv(t, func(su *setup) {
		su.emu.Nodes = []emulator.Node{{Name: "pve1"}, {Name: "pve2"}}
		su.config[FieldNode] = "pve2"
		onSharedStorage(su) // PVE clones to another node only a VM on shared storage
	})
	m := e.create(t, "inst_pin")
	if v := e.vm(t, mustAtoi(t, m.ID)); v.Node != "pve2" || v.Status != emulator.StatusRunning || m.Region != "pve2" {
		t.Fatalf("VM on %s (%s), region %s; want running on pve2", v.Node, v.Status, m.Region)
	}
	// A fresh client (no node memory) finds the VM on the pinned node at once.
	c, err := e.def.New(provider.BuildContext{Account: e.acct})
	if err != nil {
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	if got, err := c.Get(context.Background(), e.call(""), m.ID); err != nil || got == nil || e.emu.Calls(emulator.RouteClusterResources) != 0 {
		t.Fatalf("get = %+v, %v with %d cluster lists", got, err, e.emu.Calls(emulator.RouteClusterResources))
	}
}

func mustAtoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sortedIDs sorts VMIDs numerically.
func sortedIDs(t testing.TB, ids []string) []string {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int { return mustAtoi(t, a) - mustAtoi(t, b) })
	return out
}
