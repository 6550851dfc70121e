package proxmox

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// TestThroughBus serves the provider on an embedded NATS server against
// the emulator and drives every verb through provider.Remote.
func TestThroughBus(t *testing.T) {
	e := newEnv(t, withDurations)
	r := providertest.Serve(t, e.def, e.clock, testSecrets)
	acct := e.acct
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	desc, err := r.Describe(ctx)
	if err != nil || desc.Extension != "provider" || desc.ID != ProviderID || len(desc.Manifest) != 12 || len(desc.ConfigSchema) == 0 {
		t.Fatalf("describe = extension %q, id %q, %d fields, %d schema bytes; %v", desc.Extension, desc.ID, len(desc.Manifest), len(desc.ConfigSchema), err)
	}
	offers, err := r.Offers(ctx, acct, api.OfferQuery{MinVcpu: 8})
	if err != nil || len(offers) != 1 || offers[0].ID != "large" || !offers[0].Available {
		t.Fatalf("offers = %v, %v", offers, err)
	}
	m, err := r.Create(ctx, acct, "inst_bus", api.MachineSpec{Name: "inst_bus", OfferID: testOffer, Image: testTemplate,
		UserData: "#cloud-config\npackages: [nginx]\n", SSHKeys: []string{"ssh-ed25519 AAAAC3 ops@example"}})
	if err != nil || m.State != api.StateRunning || len(m.Addresses) != 1 || m.Name != "inst-bus" {
		t.Fatalf("create = %+v, %v", m, err)
	}
	wantState := func(state api.MachineState) *api.ExternalMachine {
		t.Helper()
		got, err := r.Get(ctx, acct, m.ID)
		if err != nil || got == nil || got.State != state {
			t.Fatalf("get = %+v, %v; want %s", got, err, state)
		}
		return got
	}
	if got := wantState(api.StateRunning); len(got.Addresses) != 1 || !strings.HasPrefix(got.Addresses[0], "10.") {
		t.Fatalf("addresses = %v", got.Addresses)
	}
	if err := r.Power(ctx, acct, m.ID, api.ActionOff); err != nil {
		t.Fatal(err)
	}
	wantState(api.StateStopped)
	if err := r.Power(ctx, acct, m.ID, api.ActionOn); err != nil {
		t.Fatal(err)
	}
	wantState(api.StateRunning)
	if err := r.Power(ctx, acct, m.ID, api.ActionNMI); !api.IsCode(err, api.CodeUnsupported) {
		t.Fatalf("power nmi = %v, want UNSUPPORTED", err)
	}
	if re, err := r.Reinstall(ctx, acct, m.ID, testTemplate2); err != nil || re.ID != m.ID {
		t.Fatalf("reinstall = %+v, %v", re, err)
	}
	wantState(api.StateRunning)
	page, err := r.List(ctx, acct, "", 0)
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != m.ID || page.NextCursor != "" {
		t.Fatalf("list = %+v, %v", page, err)
	}
	if err := r.Delete(ctx, acct, m.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(ctx, acct, m.ID); err != nil || got != nil {
		t.Fatalf("get after delete = %+v, %v; want absent", got, err)
	}
	if err := r.Delete(ctx, acct, m.ID); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("second delete = %v, want NOT_FOUND", err)
	}
	bad := acct
	bad.Config = map[string]any{FieldURL: "https://x/api2/json", FieldTokenID: "a@b!c", FieldTokenSecret: "plain-value",
		FieldSizes: acct.Config[FieldSizes]}
	if _, err := r.Offers(ctx, bad, api.OfferQuery{}); !api.IsCode(err, api.CodeInvalidInput) || strings.Contains(err.Error(), "plain-value") {
		t.Fatalf("plain token secret: %v", err)
	}
}

// TestAccountTaskPollThroughBus: an account's taskPollMs sets how often a
// create polls its tasks. The same create (emulated task durations on the
// fake clock) polls each task ceil(duration/poll) times, at least once:
// fewer status requests with a longer interval. An unusable value is
// refused over the bus naming account.config.taskPollMs.
func TestAccountTaskPollThroughBus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	durations := realisticDurations()
	createTasks := []string{"qmclone", "resize", "qmstart"} // the config is a synchronous PUT
	for _, pollMs := range []int{1000, 5000} {
		e := newEnv(t, withDurations)
		r := providertest.Serve(t, e.def, e.clock, testSecrets)
		acct := e.acct
		acct.Config[FieldTaskPollMs] = pollMs
		e.emu.ResetCalls()
		if _, err := r.Create(ctx, acct, "inst_poll", spec("inst_poll")); err != nil {
			t.Fatalf("poll %d ms: create: %v", pollMs, err)
		}
		want := 0
		poll := time.Duration(pollMs) * time.Millisecond
		for _, typ := range createTasks {
			want += max(1, int((durations[typ]+poll-1)/poll))
		}
		if got := e.emu.Calls(emulator.RouteTaskStatus); got != want {
			t.Errorf("poll %d ms: %d task status requests, want %d", pollMs, got, want)
		}
		if pollMs == 1000 {
			acct.Config[FieldTaskPollMs] = 50
			_, err := r.Offers(ctx, acct, api.OfferQuery{})
			if ce := providertest.WantCode(t, err, api.CodeInvalidConfig); ce.Path() != "account.config."+FieldTaskPollMs {
				t.Errorf("taskPollMs 50: path %q, want account.config.%s", ce.Path(), FieldTaskPollMs)
			}
		}
	}
}

// TestCreateTagsLastThroughBus: TestCreateTagsLast's promise over the bus
// (issue 21, item 5). A create whose start task fails leaves an untagged
// clone that list does not show and get answers absent; the retry with the
// key finishes and tags it: one VM, running, listed once.
func TestCreateTagsLastThroughBus(t *testing.T) {
	e := newEnv(t, withDurations)
	r := providertest.Serve(t, e.def, e.clock, testSecrets)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.emu.InjectTaskFault(emulator.TaskFault{Type: "qmstart", ExitStatus: "start failed: QEMU exited with code 1"})
	if _, err := r.Create(ctx, e.acct, "inst_last", spec("inst_last")); err == nil {
		t.Fatal("create succeeded despite the failed start")
	}
	half := e.machines()
	if len(half) != 1 || hasManagedTag(strings.Join(half[0].Tags, ";")) {
		t.Fatalf("after the failed start: %+v, want one untagged clone", half)
	}
	id := strconv.Itoa(half[0].VMID)
	if page, err := r.List(ctx, e.acct, "", 10); err != nil || len(page.Items) != 0 {
		t.Fatalf("list while the clone is half made = %+v, %v; want empty", page.Items, err)
	}
	if got, err := r.Get(ctx, e.acct, id); err != nil || got != nil {
		t.Fatalf("get of the half-made clone = %+v, %v; want absent", got, err)
	}
	m, err := r.Create(ctx, e.acct, "inst_last", spec("inst_last"))
	if err != nil || m.ID != id {
		t.Fatalf("retry = %+v, %v; want the clone %s finished", m, err, id)
	}
	done := e.machines()
	if len(done) != 1 || !hasManagedTag(strings.Join(done[0].Tags, ";")) || done[0].Status != emulator.StatusRunning {
		t.Fatalf("after the retry: %+v, want the clone tagged and running", done)
	}
	if page, err := r.List(ctx, e.acct, "", 10); err != nil || len(page.Items) != 1 || page.Items[0].ID != id {
		t.Fatalf("list after the retry = %+v, %v; want only %s", page.Items, err, id)
	}
}
