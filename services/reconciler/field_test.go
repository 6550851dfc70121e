package reconciler

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// A delete never creates (issue 11, item 2): an instance whose create
// Hetzner refused (its name was taken) is deleted once the name is free
// again without a single POST /servers.
func TestDeleteOfAFailedInstanceNeverCreates(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner()
	holder := h.create(api.InstanceCreateRequest{Name: "w1"})
	h.waitPhase(holder.ID, api.PhaseRunning)
	refused := h.create(api.InstanceCreateRequest{Name: "w1", PoolID: h.otherPool()})
	h.waitPhase(refused.ID, api.PhaseFailed)

	if err := h.call("delete", api.IDRequest{ID: holder.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(holder.ID) // the name w1 is free again
	emu.Emulator().ResetCalls()
	if err := h.call("delete", api.IDRequest{ID: refused.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(refused.ID)
	if got := emu.Emulator().Calls("POST /servers"); got != 0 {
		t.Fatalf("the delete of an instance that never got a server sent %d POST /servers, want 0", got)
	}
	if n := len(emu.Emulator().Servers()); n != 0 {
		t.Fatalf("emulator holds %d servers after both deletes, want 0", n)
	}
}

// A delete never creates, also when the create's outcome is unknown
// (issue 11, item 2): the deletion deletes a machine the lost create made
// by its key (delete by key: GET /servers?label_selector=…, DELETE), or,
// when none carries it, drops the record once no create sent before the
// deletion can land; neither sends a POST /servers.
func TestDeleteAfterAnUnknownCreateNeverCreates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lose   func(*emulator.Emulator)
		leaves int // servers the lost create made
	}{
		{"reply lost after the server was made", func(e *emulator.Emulator) { e.DropResponseNext("POST /servers", 1) }, 1},
		{"server error, nothing made", func(e *emulator.Emulator) {
			e.FailNext("POST /servers", 1, http.StatusInternalServerError, "server_error", "try again")
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := fastOptions()
			opts.CallTimeout = time.Second
			h := newHarnessHoldingLiveRetries(t, opts) // only the delete acts
			emu := h.useHetzner().Emulator()
			tc.lose(emu)
			inst := h.create(api.InstanceCreateRequest{Name: "lost"})
			h.waitFor(inst.ID, "a failed create", func(i *api.Instance, err error) bool {
				return err == nil && i.Status.Retries > 0 && i.Status.CreateRequested && i.Status.Machine == nil
			})
			if n := len(emu.Servers()); n != tc.leaves {
				t.Fatalf("the lost create left %d servers, want %d", n, tc.leaves)
			}
			emu.ResetCalls()
			if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
				t.Fatal(err)
			}
			h.waitGone(inst.ID)
			if got := emu.Calls("POST /servers"); got != 0 {
				t.Fatalf("the delete sent %d POST /servers, want 0", got)
			}
			if n := len(emu.Servers()); n != 0 {
				t.Fatalf("emulator holds %d servers after the delete, want 0", n)
			}
		})
	}
}

// A deletion that finds no machine of the key waits only for the last
// create attempt to have ended, not a fixed time after the delete: the
// delete of an instance that failed long ago (its last attempt an hour
// back) ends at once, though the call timeout is ten minutes.
func TestDeleteOfALongFailedInstanceDoesNotWait(t *testing.T) {
	opts := fastOptions()
	opts.CallTimeout = 10 * time.Minute
	h := newHarness(t, opts)
	emu := h.useHetzner().Emulator()
	holder := h.waitPhase(h.create(api.InstanceCreateRequest{Name: "lw"}).ID, api.PhaseRunning)
	refused := h.waitPhase(h.create(api.InstanceCreateRequest{Name: "lw", PoolID: h.otherPool()}).ID, api.PhaseFailed)
	longAgo := time.Now().Add(-time.Hour).UTC()
	h.updateRecord(refused.ID, func(i *api.Instance) { i.Status.CreateRequestedAt = &longAgo })
	emu.ResetCalls()
	if err := h.call("delete", api.IDRequest{ID: refused.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(refused.ID) // 30 s at most; a wait from the delete would be 20 min
	if got := emu.Calls("POST /servers"); got != 0 {
		t.Fatalf("the delete sent %d POST /servers, want 0", got)
	}
	if _, err := h.get(holder.ID); err != nil {
		t.Fatalf("the holder of the name: %v", err)
	}
}

// reinstallEnded requests a reinstall of instance id with image and waits
// until it left Executing.
func (h *harness) reinstallEnded(id, image string) *api.OperationStatus {
	h.t.Helper()
	var out api.Instance
	if err := h.call("reinstall", api.InstanceReinstallRequest{ID: id, Image: image}, &out); err != nil {
		h.t.Fatal(err)
	}
	return h.opEnded(id, out.Desired.Operation.ID)
}

// opEnded waits until operation opID of instance id left Executing.
func (h *harness) opEnded(id, opID string) *api.OperationStatus {
	h.t.Helper()
	return h.waitFor(id, "operation "+opID+" ended", func(i *api.Instance, err error) bool {
		last := i.Status.LastOperation
		return err == nil && last != nil && last.ID == opID && last.State != api.OperationExecuting
	}).Status.LastOperation
}

// A one-shot operation the API refused before acting (issue 11, item 5:
// Hetzner's 423 locked while another action runs) is sent again under the
// same operation until it runs, and runs once; one whose reply was lost
// may have run: Unknown, never sent again.
func TestRefusedOperationIsRetriedAndALostOneIsNot(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner().Emulator()
	inst := h.create(api.InstanceCreateRequest{Name: "op"})
	h.waitPhase(inst.ID, api.PhaseRunning)

	const rebuild, reset = "POST /servers/{id}/actions/rebuild", "POST /servers/{id}/actions/reset"
	emu.FailNext(rebuild, 2, 423, "locked", "another action is running")
	if last := h.reinstallEnded(inst.ID, "debian-12"); last.State != api.OperationSucceeded {
		t.Fatalf("reinstall refused twice with 423 locked ended %+v, want Succeeded after the lock cleared", last)
	}
	if got := emu.Calls(rebuild); got != 3 {
		t.Fatalf("%d rebuild requests, want 3 (two refused, one run)", got)
	}

	emu.DropResponseNext(reset, 1)
	var out api.Instance
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, &out); err != nil {
		t.Fatal(err)
	}
	if last := h.opEnded(inst.ID, out.Desired.Operation.ID); last.State != api.OperationUnknown {
		t.Fatalf("a reset whose reply was lost ended %+v, want Unknown", last)
	}
	h.waitPhase(inst.ID, api.PhaseRunning)
	if got := emu.Calls(reset); got != 1 {
		t.Fatalf("%d reset requests, want 1: a reset that may have run is never sent again", got)
	}
}

// After a run of failed creates, the looks at the booting machine follow
// the boot (issue 11, item 7): PollInterval after the create, doubling per
// look, not the delay the failures' passes had grown to.
func TestLooksAfterRetriesFollowTheBoot(t *testing.T) {
	opts := fastOptions()
	opts.Retry = RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond}
	h := newHarness(t, opts, startAPI) // the passes below are the only ones
	h.cloud.BootPolls = 2
	busy := api.ProviderError(412, "resource_unavailable", "no capacity")
	h.cloud.FailNext(provider.VerbCreate, busy, busy, busy, busy, busy)
	inst := h.create(api.InstanceCreateRequest{})

	var looks []time.Duration // the delays decided after each pass that saw the machine
	for range 100 {
		out, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if out.done {
			break
		}
		if cur, err := h.get(inst.ID); err == nil && cur.Status.Machine != nil {
			looks = append(looks, out.requeue)
		}
		h.clock.Advance(out.requeue) // what JetStream's redelivery would wait
	}
	want := []time.Duration{opts.PollInterval, 2 * opts.PollInterval}
	if len(looks) != len(want) || looks[0] != want[0] || looks[1] != want[1] {
		t.Fatalf("after 5 failed creates the booting machine was looked at again after %v, want %v", looks, want)
	}
	if got := h.cloud.Calls(provider.VerbCreate); got != 6 {
		t.Fatalf("%d creates, want 6", got)
	}
}

// serverID is the emulator's id of an instance's recorded server.
func serverID(t *testing.T, inst *api.Instance) int64 {
	t.Helper()
	id, err := strconv.ParseInt(inst.Status.Machine.ID, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// server is the emulator's server with id (failing when there is none).
func server(t *testing.T, emu *emulator.Emulator, id string) emulator.ServerSnapshot {
	t.Helper()
	for _, s := range emu.Servers() {
		if strconv.FormatInt(s.ID, 10) == id {
			return s
		}
	}
	t.Fatalf("no server %s", id)
	return emulator.ServerSnapshot{}
}

// A server being deleted out of band is drift, not a deletion (issue 11,
// item 8): the instance shows Provisioning with the Drift condition, no
// deleting event, and is re-created once the server is gone.
func TestServerDeletedOutOfBandIsNotShownDeleting(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner().Emulator()
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{Name: "oob"}).ID, api.PhaseRunning)
	deleting, err := h.env.NC.SubscribeSync(bus.Event(tenant, bus.ResourceInstances, inst.ID, "deleting"))
	if err != nil {
		t.Fatal(err)
	}
	sid := serverID(t, inst)
	emu.SetServerStatus(sid, "deleting") // someone deletes it in the console
	if _, err := h.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := h.waitFor(inst.ID, "the deleting server seen", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Machine != nil && i.Status.Machine.State == api.StateDeleting
	})
	if c := condition(seen, api.ConditionDrift); seen.Status.Phase != api.PhaseProvisioning || c == nil || c.Status != api.ConditionTrue {
		t.Fatalf("instance whose server is deleted out of band: phase %s, drift %+v; want Provisioning with Drift True", seen.Status.Phase, c)
	}
	emu.DeleteServerOutOfBand(sid)
	again := h.waitFor(inst.ID, "re-created", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Phase == api.PhaseRunning && i.Status.Machine != nil && i.Status.Machine.ID != inst.Status.Machine.ID
	})
	if c := condition(again, api.ConditionDrift); c == nil || c.Status != api.ConditionFalse {
		t.Fatalf("drift after the re-create: %+v, want False", c)
	}
	if msg, err := deleting.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("a deleting event was published though nobody deleted the instance: %s", msg.Data)
	}
}

// A reinstall that fails leaves the record's image the one the machine
// runs, and the record's machine as the provider reports it on the next
// look (issue 11, item 8).
func TestFailedReinstallKeepsTheImageTheMachineRuns(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner().Emulator()
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{Name: "ri"}).ID, api.PhaseRunning)
	emu.FailNextAction("rebuild_server", "image_broken", "the image could not be written")
	if last := h.reinstallEnded(inst.ID, "debian-12"); last.State != api.OperationFailed {
		t.Fatalf("reinstall whose action failed: %+v, want Failed", last)
	}
	got := h.waitPhase(inst.ID, api.PhaseRunning)
	srv := server(t, emu, got.Status.Machine.ID)
	if got.Image != inst.Image || srv.Image != inst.Image {
		t.Fatalf("after the failed reinstall the record says image %q, the server runs %q; want both %q", got.Image, srv.Image, inst.Image)
	}
}

// A rebuild Hetzner accepted whose action poll then got a 429 may have
// run: it is Unknown, never Failed (which would invite a second one), and
// it is not sent again.
func TestAcceptedRebuildWhosePollIsRateLimitedIsUnknown(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner().Emulator()
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{Name: "rl"}).ID, api.PhaseRunning)
	emu.ResetCalls()
	emu.FailNext("GET /actions", 1, http.StatusTooManyRequests, "rate_limit_exceeded", "slow down")
	if last := h.reinstallEnded(inst.ID, "debian-12"); last.State != api.OperationUnknown {
		t.Fatalf("rebuild accepted, poll rate limited: %+v, want Unknown", last)
	}
	h.waitPhase(inst.ID, api.PhaseRunning)
	if n := emu.Calls("POST /servers/{id}/actions/rebuild"); n != 1 {
		t.Fatalf("%d rebuild requests, want exactly 1", n)
	}
}

// A 409 uniqueness_error that is not about the name (the name is free when
// the provider looks the holder up) is retried a few times, then fails the
// instance: it is not retried forever.
func TestUniquenessRefusalNotAboutTheNameEnds(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner().Emulator()
	emu.FailNext("POST /servers", 1000, http.StatusConflict, "uniqueness_error", "SSH key not unique")
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{Name: "uq"}).ID, api.PhaseFailed)
	if n := emu.Calls("POST /servers"); n != maxNameFreedRetries+1 {
		t.Fatalf("%d POST /servers before the instance failed, want %d (status %+v)", n, maxNameFreedRetries+1, inst.Status)
	}
}

// A reinstall requested while the server is gone is done by the re-create
// with the reinstall's image: the fresh server is not rebuilt once more
// (issue 11, item 8).
func TestReinstallOfAVanishedServerIsDoneByTheRecreate(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner().Emulator()
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{Name: "rv"}).ID, api.PhaseRunning)
	emu.DeleteServerOutOfBand(serverID(t, inst))
	if last := h.reinstallEnded(inst.ID, "debian-12"); last.State != api.OperationSucceeded {
		t.Fatalf("reinstall of a vanished server: %+v, want Succeeded", last)
	}
	got := h.waitPhase(inst.ID, api.PhaseRunning)
	if n := emu.Calls("POST /servers/{id}/actions/rebuild"); n != 0 {
		t.Fatalf("the re-created server was rebuilt %d times, want 0 (created with the new image)", n)
	}
	if srv := server(t, emu, got.Status.Machine.ID); got.Image != "debian-12" || srv.Image != "debian-12" {
		t.Fatalf("record image %q, server image %q; want debian-12", got.Image, srv.Image)
	}
}

// brokenTLS fails every request with a certificate error while broken is
// set, as a provider whose pinned CA no longer matches.
type brokenTLS struct{ broken atomic.Bool }

func (b *brokenTLS) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.broken.Load() {
		return nil, errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority")
	}
	return http.DefaultTransport.RoundTrip(req)
}

// An instance whose provider calls fail does not look healthy in list
// (issue 11, item 10): Ready turns False with the failure's code and
// message, and True again once a call succeeds.
func TestFailingProviderCallsShowInList(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu, err := emulator.Start(emulator.Options{ActionDuration: 10 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	tr := &brokenTLS{}
	h.pool = h.addHetznerPool(emu, tr)
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{Name: "tls"}).ID, api.PhaseRunning)
	ready := func(i *api.Instance) *api.Condition { return condition(i, api.ConditionReady) }
	if c := ready(inst); c == nil || c.Status != api.ConditionTrue {
		t.Fatalf("a running instance has Ready %+v, want True", c)
	}

	tr.broken.Store(true)
	if _, err := h.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	listed := func() *api.Instance {
		t.Helper()
		var page api.List[api.Instance]
		if err := h.call("list", map[string]any{}, &page); err != nil || len(page.Items) != 1 {
			t.Fatalf("list: %d items, %v", len(page.Items), err)
		}
		return &page.Items[0]
	}
	h.waitFor(inst.ID, "Ready False", func(i *api.Instance, err error) bool {
		c := ready(i)
		return err == nil && c != nil && c.Status == api.ConditionFalse
	})
	if c := ready(listed()); c == nil || c.Status != api.ConditionFalse || c.Reason != api.ReasonOf(api.CodeProviderError) || c.Message == "" {
		t.Fatalf("listed while every call fails: Ready %+v, want False with PROVIDER_ERROR and the error", c)
	}

	tr.broken.Store(false)
	h.waitFor(inst.ID, "Ready again", func(i *api.Instance, err error) bool {
		c := ready(i)
		return err == nil && c != nil && c.Status == api.ConditionTrue
	})
	if got := listed(); got.Status.Phase != api.PhaseRunning {
		t.Fatalf("after the calls recovered: phase %s", got.Status.Phase)
	}
}
