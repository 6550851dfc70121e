package reconciler

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
	proxmox "better-compute.io/compute/services/provider-proxmox"
	pveemu "better-compute.io/compute/services/provider-proxmox/emulator"
)

// machineLabels are the labels the memory cloud's machine of instance id
// carries.
func (h *harness) machineLabels(id string) map[string]string {
	h.t.Helper()
	m, ok := h.cloud.ByKey()[id]
	if !ok {
		h.t.Fatalf("the cloud has no machine of %s", id)
	}
	return m.Labels
}

// eventLabels delivers the labels of every event of instance id from now
// until the test ends, keyed by event type.
func (h *harness) eventLabels(t *testing.T) <-chan api.Event {
	events := make(chan api.Event, 256)
	sub, err := h.env.NC.Subscribe(bus.Event(tenant, bus.ResourceInstances, "*", "*"), func(m *nats.Msg) {
		var ev api.Event
		if json.Unmarshal(m.Data, &ev) == nil {
			select {
			case events <- ev:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return events
}

// update sends instances.update and returns the record it answered.
func (h *harness) update(req api.InstanceUpdateRequest) (*api.Instance, error) {
	var out api.Instance
	err := h.call("update", req, &out)
	return &out, err
}

// converged waits until instance id runs with its status at its
// generation.
func (h *harness) converged(id string) *api.Instance {
	h.t.Helper()
	return h.waitPhase(id, api.PhaseRunning)
}

// Labels given at create reach the machine (MachineSpec.Labels), come
// back in status.machine.labels, and every event of the instance carries
// them.
func TestCreateLabelsReachMachineAndEvents(t *testing.T) {
	h := newHarness(t, fastOptions())
	events := h.eventLabels(t)
	labels := map[string]string{"env": "prod", "example.com/team": "web"}
	inst := h.create(api.InstanceCreateRequest{Name: "labelled", Labels: labels})
	if !maps.Equal(inst.Labels, labels) {
		t.Fatalf("create answered labels %v, want %v", inst.Labels, labels)
	}
	got := h.converged(inst.ID)
	if m := h.machineLabels(inst.ID); !maps.Equal(m, labels) {
		t.Errorf("the machine carries %v, want %v", m, labels)
	}
	if !maps.Equal(got.Status.Machine.Labels, labels) || !maps.Equal(got.Status.AppliedLabels, labels) {
		t.Errorf("status.machine.labels %v, status.appliedLabels %v, want %v", got.Status.Machine.Labels, got.Status.AppliedLabels, labels)
	}
	if n := h.cloud.Calls(provider.VerbRelabel); n != 0 {
		t.Errorf("%d relabel calls for labels given at create, want 0", n)
	}
	seen := 0
	for seen < 2 { // created and running at least
		ev := <-events
		if ev.ResourceID != inst.ID {
			continue
		}
		seen++
		if !maps.Equal(ev.Labels, labels) {
			t.Errorf("event %s carries labels %v, want %v", ev.Type, ev.Labels, labels)
		}
	}
}

// A create with an invalid label or a key under the platform's prefix is
// INVALID_INPUT naming the label.
func TestCreateRefusesBadLabels(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	for key, path := range map[string]string{
		"-bad":                      "labels[-bad]",
		"better-compute.io/managed": "labels[better-compute.io/managed]",
	} {
		var out api.Instance
		err := h.call("create", api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small", Labels: map[string]string{key: "v"}}, &out)
		if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != path {
			t.Errorf("create with label %q: %v (path %q), want INVALID_INPUT at %s", key, err, ce.Path(), path)
		}
	}
}

// instances.list with a selector answers exactly the instances whose
// labels match; a malformed selector is INVALID_INPUT naming selector.
func TestListBySelector(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	ids := map[string]string{}
	for name, labels := range map[string]map[string]string{
		"web-prod": {"env": "prod", "tier": "web"},
		"web-dev":  {"env": "dev", "tier": "web"},
		"db-prod":  {"env": "prod", "tier": "db", "backup": ""},
		"bare":     nil,
	} {
		ids[h.create(api.InstanceCreateRequest{Name: name, Labels: labels}).ID] = name
	}
	for _, tc := range []struct {
		selector string
		want     []string
	}{
		{"", []string{"bare", "db-prod", "web-dev", "web-prod"}},
		{"env=prod", []string{"db-prod", "web-prod"}},
		{"env==prod,tier=web", []string{"web-prod"}},
		{"env!=prod", []string{"bare", "web-dev"}},
		{"tier in (db, web),env notin (dev)", []string{"db-prod", "web-prod"}},
		{"backup", []string{"db-prod"}},
		{"!env", []string{"bare"}},
		{"env=staging", nil},
	} {
		var page api.List[api.Instance]
		if err := h.call("list", api.InstanceListRequest{Selector: tc.selector}, &page); err != nil {
			t.Fatalf("list %q: %v", tc.selector, err)
		}
		var got []string
		for _, i := range page.Items {
			got = append(got, ids[i.ID])
		}
		if !equalSorted(got, tc.want) {
			t.Errorf("list %q answered %v, want %v", tc.selector, got, tc.want)
		}
	}
	var page api.List[api.Instance]
	err := h.call("list", api.InstanceListRequest{Selector: "env in (prod"}, &page)
	if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != "selector" {
		t.Errorf("list with a malformed selector: %v, want INVALID_INPUT at selector", err)
	}
}

func equalSorted(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// instances.update of the labels bumps the generation; the reconciler
// relabels the machine once (relabel phase) and observedGeneration
// catches up. Asking for the same labels again changes nothing; {}
// removes them all.
func TestUpdateLabelsRelabelsMachine(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{Name: "relabel", Labels: map[string]string{"env": "dev"}})
	inst = h.converged(inst.ID)
	labels := map[string]string{"env": "prod", "owner": "ops"}
	updated, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != inst.Generation+1 || !maps.Equal(updated.Labels, labels) {
		t.Fatalf("update answered generation %d labels %v, want %d and %v", updated.Generation, updated.Labels, inst.Generation+1, labels)
	}
	got := h.waitFor(inst.ID, "relabelled", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.ObservedGeneration == updated.Generation && maps.Equal(i.Status.AppliedLabels, labels)
	})
	if m := h.machineLabels(inst.ID); !maps.Equal(m, labels) {
		t.Errorf("the machine carries %v, want %v", m, labels)
	}
	if n := h.cloud.Calls(provider.VerbRelabel); n != 1 {
		t.Errorf("%d relabel calls, want 1", n)
	}
	same, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Labels: labels})
	if err != nil || same.Generation != updated.Generation {
		t.Errorf("an update to the same labels: generation %d (%v), want %d unchanged", same.Generation, err, updated.Generation)
	}
	// A versioned update is a read-modify-write: a status write after the
	// read (the pass that recorded the relabel may still be finishing)
	// raises the version, and the client reads again, as a user would.
	cleared, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Labels: map[string]string{}, Version: got.Version})
	for attempt := 0; api.IsCode(err, api.CodeConflict) && attempt < 10; attempt++ {
		cleared, err = h.update(api.InstanceUpdateRequest{ID: inst.ID, Labels: map[string]string{}, Version: h.record(inst.ID).Version})
	}
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor(inst.ID, "labels removed", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.ObservedGeneration == cleared.Generation && i.Status.AppliedLabels == nil
	})
	if m := h.machineLabels(inst.ID); len(m) != 0 {
		t.Errorf("the machine carries %v after {}, want none", m)
	}
}

// An update naming a version other than the record's is CONFLICT and
// changes nothing; bad fields are INVALID_INPUT naming them.
func TestUpdateRefusals(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	inst := h.create(api.InstanceCreateRequest{Name: "refusals"})
	_, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Version: inst.Version + 1, Labels: map[string]string{"a": "b"}})
	if ce := api.AsComputeError(err); ce.Code != api.CodeConflict || ce.Path() != "version" {
		t.Errorf("update at a stale version: %v, want CONFLICT at version", err)
	}
	if rec := h.record(inst.ID); rec.Generation != inst.Generation || rec.Labels != nil {
		t.Errorf("a refused update changed the record: generation %d labels %v", rec.Generation, rec.Labels)
	}
	for _, tc := range []struct {
		req  api.InstanceUpdateRequest
		code api.Code
		path string
	}{
		{api.InstanceUpdateRequest{ID: "pool_x"}, api.CodeInvalidInput, "id"},
		{api.InstanceUpdateRequest{ID: inst.ID, Flavor: "huge"}, api.CodeInvalidInput, "flavor"},
		{api.InstanceUpdateRequest{ID: inst.ID, Labels: map[string]string{"x": "-"}}, api.CodeInvalidInput, "labels[x]"},
		{api.InstanceUpdateRequest{ID: api.NewID(api.PrefixInstance), Labels: map[string]string{"a": "b"}}, api.CodeNotFound, ""},
	} {
		_, err := h.update(tc.req)
		if ce := api.AsComputeError(err); ce.Code != tc.code || tc.path != "" && ce.Path() != tc.path {
			t.Errorf("update %+v: %v (path %q), want %s at %q", tc.req, err, ce.Path(), tc.code, tc.path)
		}
	}
	// A flavor of the pool is stored with the generation bumped (the
	// resize operation converges the machine).
	resized, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Flavor: "bogus", Version: inst.Version})
	if err != nil || resized.Flavor != "bogus" || resized.Generation != inst.Generation+1 {
		t.Errorf("update of the flavor: flavor %q generation %d (%v), want bogus at %d", resized.Flavor, resized.Generation, err,
			inst.Generation+1)
	}
}

// instances.update of the image queues the reinstall operation, exactly
// as instances.reinstall does: the machine is reinstalled once and the
// instance's image is the new one when it succeeded.
func TestUpdateImageReinstalls(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.converged(h.create(api.InstanceCreateRequest{Name: "reimage"}).ID)
	updated, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Image: "ubuntu-24.04"})
	if err != nil {
		t.Fatal(err)
	}
	op := updated.Desired.Operation
	if op == nil || op.Action != api.ActionReinstall || op.Image != "ubuntu-24.04" || updated.Image != inst.Image {
		t.Fatalf("update answered operation %+v and image %q, want a reinstall to ubuntu-24.04 and image %q until it ran",
			op, updated.Image, inst.Image)
	}
	if last := h.opEnded(inst.ID, op.ID); last.State != api.OperationSucceeded {
		t.Fatalf("reinstall ended %s: %s", last.State, last.Message)
	}
	if got := h.record(inst.ID); got.Image != "ubuntu-24.04" {
		t.Errorf("image %q after the reinstall, want ubuntu-24.04", got.Image)
	}
	if n := h.cloud.Calls(provider.VerbReinstall); n != 1 {
		t.Errorf("%d reinstall calls, want 1", n)
	}
	again, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Image: "ubuntu-24.04"})
	if err != nil || again.Desired.Operation.ID != op.ID {
		t.Errorf("an update to the image it runs queued %+v (%v), want nothing new", again.Desired.Operation, err)
	}
}

// On Hetzner (its emulator) an instance's labels are server labels beside
// the system labels (managed, idempotency key), read back without them;
// a relabel replaces the user labels and keeps every system label.
func TestLabelsOnHetzner(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner()
	labels := map[string]string{"env": "prod", "example.com/team": "web"}
	inst := h.converged(h.create(api.InstanceCreateRequest{Name: "hz-labelled", Labels: labels}).ID)
	server := func() map[string]string {
		for _, s := range emu.Emulator().Servers() {
			if s.Name == "hz-labelled" {
				return s.Labels
			}
		}
		t.Fatal("the emulator has no server hz-labelled")
		return nil
	}
	system := map[string]string{"better-compute.io/managed": "true", "better-compute.io/idempotency-key": inst.ID}
	want := maps.Clone(labels)
	maps.Copy(want, system)
	if got := server(); !maps.Equal(got, want) {
		t.Errorf("the server carries %v, want %v", got, want)
	}
	if !maps.Equal(inst.Status.Machine.Labels, labels) {
		t.Errorf("status.machine.labels %v, want the user labels %v", inst.Status.Machine.Labels, labels)
	}
	relabelled := map[string]string{"env": "staging"}
	updated, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Labels: relabelled})
	if err != nil {
		t.Fatal(err)
	}
	got := h.waitFor(inst.ID, "relabelled", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.ObservedGeneration == updated.Generation && maps.Equal(i.Status.Machine.Labels, relabelled)
	})
	want = maps.Clone(relabelled)
	maps.Copy(want, system)
	if s := server(); !maps.Equal(s, want) {
		t.Errorf("after the relabel the server carries %v, want %v", s, want)
	}
	if got.Status.Phase != api.PhaseRunning {
		t.Errorf("phase %s after the relabel, want Running", got.Status.Phase)
	}
}

// settle runs passes by hand until one finishes the instance (the
// harness's clock moved over every requested delay).
func (h *harness) settle(id string) {
	h.t.Helper()
	for range 50 {
		out, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, id)
		if err != nil {
			h.t.Fatal(err)
		}
		if out.done {
			return
		}
		h.clock.Advance(out.requeue)
	}
	h.t.Fatalf("instance %s did not settle in 50 passes", id)
}

// A pass killed while its relabel is at the provider (the call lands,
// its outcome is never recorded) leaves status.appliedLabels as they
// were: the next pass relabels again, which changes nothing more (relabel
// is idempotent), and the instance converges with the machine labelled
// once as asked.
func TestRelabelInterruptedIsRepeated(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI) // the passes below are the only ones
	inst := h.create(api.InstanceCreateRequest{Name: "killed", Labels: map[string]string{"env": "dev"}})
	h.settle(inst.ID)
	want := map[string]string{"env": "prod"}
	updated, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Labels: want})
	if err != nil {
		t.Fatal(err)
	}

	hold := h.cloud.HoldNext(provider.VerbRelabel)
	ctx, kill := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		_, err := h.rec.reconcile(ctx, h.rec.log, tenant, inst.ID)
		ended <- err
	}()
	<-hold.Held // the relabel reached the cloud
	kill()      // the pass dies before any reply
	if err := <-ended; err == nil {
		t.Fatal("the killed pass ended without an error")
	}
	close(hold.Release) // the call lands after all
	waitFor(t, "the held relabel to land", func() bool { return maps.Equal(h.machineLabels(inst.ID), want) })
	if rec := h.record(inst.ID); !maps.Equal(rec.Status.AppliedLabels, map[string]string{"env": "dev"}) {
		t.Fatalf("the killed pass recorded appliedLabels %v", rec.Status.AppliedLabels)
	}

	h.settle(inst.ID)
	got := h.record(inst.ID)
	if got.Status.ObservedGeneration != updated.Generation || !maps.Equal(got.Status.AppliedLabels, want) ||
		!maps.Equal(h.machineLabels(inst.ID), want) {
		t.Errorf("after the next pass: observedGeneration %d (want %d), appliedLabels %v, machine %v; want %v",
			got.Status.ObservedGeneration, updated.Generation, got.Status.AppliedLabels, h.machineLabels(inst.ID), want)
	}
	if n := h.cloud.Calls(provider.VerbRelabel); n != 2 {
		t.Errorf("%d relabel calls, want 2 (the lost one, repeated once)", n)
	}
}

// waitFor polls cond (10 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// On Proxmox VE (its emulator) an instance's labels are tags beside the
// template's and better-compute (proxmox.LabelTag), read back
// lower-cased; a relabel replaces only the label tags.
func TestLabelsOnProxmox(t *testing.T) {
	h := newHarness(t, fastOptions())
	srv, err := pveemu.Start(pveemu.Options{Tokens: map[string]string{pveemu.DefaultTokenID: "test-token"},
		Templates: []pveemu.Template{{VMID: 9000, Name: "ubuntu-24.04", DiskGiB: 10, Cores: 2, MemoryMiB: 2048, Tags: "base"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	h.pool = h.servePool(proxmox.Definition(), "pve", map[string]any{
		proxmox.FieldURL: srv.URL(), proxmox.FieldTokenID: pveemu.DefaultTokenID,
		proxmox.FieldTokenSecret: "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz", proxmox.FieldCACert: string(srv.CACertPEM()),
		proxmox.FieldSizes: []any{map[string]any{"name": "small", "vcpu": 1, "memoryGiB": 1, "diskGiB": 10}},
	}, api.Flavor{Name: "small", OfferID: "small", Image: "ubuntu-24.04"})
	labels := map[string]string{"env": "Prod", "example.com/team": "web"}
	inst := h.converged(h.create(api.InstanceCreateRequest{Name: "pve-labelled", Labels: labels}).ID)
	tags := func() []string {
		vmid, _ := strconv.Atoi(inst.Status.Machine.ID)
		vm, ok := srv.Emulator().VM(vmid)
		if !ok {
			t.Fatalf("the emulator has no VM %d", vmid)
		}
		return vm.Tags
	}
	if got := tags(); !slices.Equal(got, []string{"base", "better-compute", "env+prod", "example.com+team+web"}) {
		t.Errorf("the VM is tagged %v", got)
	}
	if want := map[string]string{"env": "prod", "example.com/team": "web"}; !maps.Equal(inst.Status.Machine.Labels, want) {
		t.Errorf("status.machine.labels %v, want %v (lower-cased)", inst.Status.Machine.Labels, want)
	}
	if !maps.Equal(inst.Status.AppliedLabels, labels) {
		t.Errorf("status.appliedLabels %v, want %v as given", inst.Status.AppliedLabels, labels)
	}
	updated, err := h.update(api.InstanceUpdateRequest{ID: inst.ID, Labels: map[string]string{"env": "staging"}})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor(inst.ID, "relabelled", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.ObservedGeneration == updated.Generation && i.Status.Phase == api.PhaseRunning &&
			maps.Equal(i.Status.Machine.Labels, map[string]string{"env": "staging"})
	})
	if got := tags(); !slices.Equal(got, []string{"base", "better-compute", "env+staging"}) {
		t.Errorf("after the relabel the VM is tagged %v", got)
	}
}
