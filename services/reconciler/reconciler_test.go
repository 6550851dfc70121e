package reconciler

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

func TestCreateToRunningThenDelete(t *testing.T) {
	h := newHarness(t, fastOptions())
	events := make(chan *nats.Msg, 64)
	sub, err := h.env.NC.ChanSubscribe(bus.EventsOf(tenant), events)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	inst := h.create(api.InstanceCreateRequest{Name: "web-1"})
	if inst.Status.Phase != api.PhasePending || inst.Generation != 1 || inst.Image != "debian-12" || inst.Desired.Power != api.PowerOn {
		t.Fatalf("create reply: %+v", inst)
	}
	running := h.waitPhase(inst.ID, api.PhaseRunning)
	machines := h.cloud.Machines()
	if len(machines) != 1 || running.Status.Machine == nil || running.Status.Machine.ID != machines[0].ID || machines[0].Name != "web-1" {
		t.Fatalf("machines %+v, status %+v", machines, running.Status)
	}
	if got := h.cloud.Calls(provider.VerbCreate); got != 1 {
		t.Fatalf("create calls = %d, want 1", got)
	}

	var deleting api.Instance
	if err := h.call("delete", api.IDRequest{ID: inst.ID}, &deleting); err != nil {
		t.Fatal(err)
	}
	if deleting.Status.Phase != api.PhaseDeleting || deleting.DeletionRequestedAt == nil {
		t.Fatalf("delete reply: %+v", deleting.Status)
	}
	h.waitGone(inst.ID)
	if n := len(h.cloud.Machines()); n != 0 {
		t.Fatalf("%d machines left after delete", n)
	}

	// The deleted event is published after the record is gone: read until
	// it came (or 10 s passed), then look at every event seen.
	seen := map[api.EventType]bool{}
	for timeout := time.After(10 * time.Second); !seen[api.EventDeleted]; {
		var msg *nats.Msg
		select {
		case msg = <-events:
		case <-timeout:
			t.Fatalf("no %q event; saw %v", api.EventDeleted, seen)
		}
		var ev api.Event
		if err := json.Unmarshal(msg.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.ResourceID != inst.ID {
			t.Fatalf("event for %s", ev.ResourceID)
		}
		seen[ev.Type] = true
	}
	for _, typ := range []api.EventType{"created", "provisioning", "running", "deleting", "deleted"} {
		if !seen[typ] {
			t.Errorf("no %q event; saw %v", typ, seen)
		}
	}
}

// The reconciler dies after the provider made the machine and before the
// status write; a new reconciler takes the redelivered work and the same
// idempotency key finds the same machine.
func TestCrashBetweenProviderCreateAndStatusWrite(t *testing.T) {
	opts := fastOptions()
	opts.AckWait = time.Second
	var victim *nats.Conn
	var crashed atomic.Bool
	opts.Hooks.AfterProviderCreate = func(string) {
		if crashed.CompareAndSwap(false, true) {
			victim.Close() // the process is gone: no status write, no ack
		}
	}
	h := newHarness(t, fastOptions())
	h.rec.Stop()
	h.opts = opts
	victim = h.env.Connect(t)
	h.startReconciler(victim)

	inst := h.create(api.InstanceCreateRequest{})
	h.waitFor(inst.ID, "crashed", func(*api.Instance, error) bool { return crashed.Load() })
	if got := h.cloud.Calls(provider.VerbCreate); got != 1 {
		t.Fatalf("create calls before restart = %d", got)
	}
	h.opts.Hooks = Hooks{}
	h.startReconciler(h.env.Connect(t))

	running := h.waitPhase(inst.ID, api.PhaseRunning)
	machines := h.cloud.Machines()
	if len(machines) != 1 || running.Status.Machine.ID != machines[0].ID {
		t.Fatalf("want exactly one machine, the recorded one; machines %+v status %+v", machines, running.Status.Machine)
	}
	if got := h.cloud.Calls(provider.VerbCreate); got != 2 {
		t.Fatalf("create calls = %d, want 2 (one per reconciler, same key)", got)
	}
}

// A pass longer than AckWait keeps its work message (progress heartbeats):
// a second replica does not get it and send a second create meanwhile.
func TestLongPassKeepsItsWork(t *testing.T) {
	opts := fastOptions()
	opts.AckWait = 600 * time.Millisecond
	release := make(chan struct{})
	var held atomic.Bool
	opts.Hooks.AfterProviderCreate = func(string) {
		if held.CompareAndSwap(false, true) {
			<-release // a slow API: 4 AckWaits
		}
	}
	h := newHarness(t, fastOptions())
	h.rec.Stop()
	h.opts = opts
	h.startReconciler(h.env.Connect(t))
	h.startReconciler(h.env.Connect(t))

	inst := h.create(api.InstanceCreateRequest{})
	h.waitFor(inst.ID, "create sent", func(*api.Instance, error) bool { return held.Load() })
	time.Sleep(4 * opts.AckWait)
	close(release)
	h.waitPhase(inst.ID, api.PhaseRunning)
	if got := h.cloud.Calls(provider.VerbCreate); got != 1 {
		t.Fatalf("create calls = %d, want 1: the work was redelivered while its pass ran", got)
	}
}

// A stopping replica hands its work back at once: another replica
// finishes the instance long before the AckWait would have run out.
func TestStoppedReplicaHandsWorkBack(t *testing.T) {
	opts := fastOptions()
	opts.AckWait = time.Hour
	h := newHarness(t, fastOptions())
	h.rec.Stop()
	h.opts = opts
	first := h.startReconciler(h.env.Connect(t))
	h.cloud.SetHung(provider.VerbCreate, true)
	inst := h.create(api.InstanceCreateRequest{})
	h.waitFor(inst.ID, "create in flight", func(*api.Instance, error) bool { return h.cloud.Calls(provider.VerbCreate) > 0 })
	first.Stop() // cancels the pass while it waits for the provider
	h.cloud.SetHung(provider.VerbCreate, false)
	h.startReconciler(h.env.Connect(t))
	h.waitPhase(inst.ID, api.PhaseRunning)
}

func TestRetryableFailuresBackOffThenConverge(t *testing.T) {
	h := newHarness(t, fastOptions())
	h.cloud.FailNext(provider.VerbCreate,
		api.ProviderError(503, "unavailable", "service unavailable"),
		api.ProviderError(503, "unavailable", "service unavailable"))
	inst := h.create(api.InstanceCreateRequest{})
	running := h.waitPhase(inst.ID, api.PhaseRunning)
	if got := h.cloud.Calls(provider.VerbCreate); got != 3 {
		t.Fatalf("create calls = %d, want 3", got)
	}
	c := providerCondition(running)
	if c == nil || c.Status != api.ConditionFalse || running.Status.Retries != 0 {
		t.Fatalf("condition after recovery: %+v retries %d", c, running.Status.Retries)
	}
}

func TestRateLimitIsHonoured(t *testing.T) {
	h := newHarness(t, fastOptions())
	h.cloud.FailNext(provider.VerbCreate, api.RateLimited(1500*time.Millisecond, "rate limit exceeded"))
	inst := h.create(api.InstanceCreateRequest{})
	h.waitPhase(inst.ID, api.PhaseRunning)
	var creates []time.Time
	for _, c := range h.cloud.Log() {
		if c.Verb == provider.VerbCreate {
			creates = append(creates, c.At)
		}
	}
	if len(creates) != 2 {
		t.Fatalf("create calls = %d, want 2", len(creates))
	}
	if gap := creates[1].Sub(creates[0]); gap < 1500*time.Millisecond {
		t.Fatalf("retried %v after a 1500ms rate limit", gap)
	}
}

func TestTerminalErrorFailsWithoutFurtherCalls(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{Flavor: "bogus"})
	failed := h.waitPhase(inst.ID, api.PhaseFailed)
	c := providerCondition(failed)
	if c == nil || c.Reason != api.ReasonOf(api.CodeInvalidConfig) || c.Status != api.ConditionTrue || c.Message == "" {
		t.Fatalf("condition: %+v", c)
	}
	if _, err := h.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * h.opts.PollInterval)
	if got := h.cloud.Calls(provider.VerbCreate); got != 1 {
		t.Fatalf("create calls = %d after a terminal error, want 1", got)
	}
}

func TestDriftIsRepairedAtResync(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{})
	first := h.waitPhase(inst.ID, api.PhaseRunning).Status.Machine.ID

	drifts, err := h.env.NC.SubscribeSync(bus.Event(tenant, bus.ResourceInstances, inst.ID, "drift"))
	if err != nil {
		t.Fatal(err)
	}
	h.cloud.SetState(first, api.StateStopped)
	if _, err := h.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	repaired := h.waitFor(inst.ID, "powered on again, drift resolved", func(i *api.Instance, err error) bool {
		m := h.cloud.Machines()
		c := condition(i, api.ConditionDrift)
		return err == nil && len(m) == 1 && m[0].State == api.StateRunning && h.cloud.Calls(provider.VerbPower) == 1 &&
			c != nil && c.Status == api.ConditionFalse
	})
	if i := repaired.Status; i.Phase != api.PhaseRunning || i.ObservedGeneration != repaired.Generation {
		t.Fatalf("after the power drift: %+v", i)
	}
	msg, err := drifts.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no drift event for the power change: %v", err)
	}
	var ev api.Event
	if err := json.Unmarshal(msg.Data, &ev); err != nil || !strings.Contains(ev.Message, "found stopped") {
		t.Fatalf("drift event %+v (%v), want one saying the machine was found stopped", ev, err)
	}

	h.cloud.Remove(first)
	if _, err := h.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := h.waitFor(inst.ID, "recreated", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Phase == api.PhaseRunning && i.Status.Machine != nil && i.Status.Machine.ID != first
	})
	if m := h.cloud.Machines(); len(m) != 1 || m[0].ID != again.Status.Machine.ID {
		t.Fatalf("machines after drift repair: %+v", m)
	}
}

// A machine id handed to another machine (a Proxmox VMID freed out of
// band and reused) is not adopted: the instance sees its machine gone and
// makes a new one under its key, and neither a power change nor the
// instance's delete ever touches the other machine.
func TestReusedMachineIDIsNeverAdopted(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{})
	first := h.waitPhase(inst.ID, api.PhaseRunning).Status.Machine.ID
	const otherKey = "inst_someone-else"
	h.cloud.ReuseID(first, otherKey)

	var out api.Instance
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOff}, &out); err != nil {
		t.Fatal(err)
	}
	again := h.waitFor(inst.ID, "recreated and stopped", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Phase == api.PhaseStopped && i.Status.Machine != nil && i.Status.Machine.ID != first
	})
	if again.Status.Machine.IdempotencyKey != inst.ID {
		t.Fatalf("new machine carries key %q, want %q", again.Status.Machine.IdempotencyKey, inst.ID)
	}
	other := h.cloud.ByKey()[otherKey]
	if other.ID != first || other.State != api.StateRunning {
		t.Fatalf("the machine now holding id %s: %+v, want it running and untouched", first, other)
	}

	if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(inst.ID)
	if m := h.cloud.Machines(); len(m) != 1 || m[0].ID != first || m[0].IdempotencyKey != otherKey {
		t.Fatalf("machines after delete: %+v, want only the other key's machine %s", m, first)
	}
	for _, c := range h.cloud.Log() {
		if c.Target == first && (c.Verb == provider.VerbPower || c.Verb == provider.VerbDelete) && c.Err == nil {
			t.Fatalf("%s reached machine %s after its id was reused", c.Verb, first)
		}
	}
}

// A resync checks settled instances against one list of the account's
// machines instead of a get each, and queues only the ones whose machine
// is missing, in another power state or now another key's.
func TestResyncListsInsteadOfGetting(t *testing.T) {
	h := newHarness(t, fastOptions())
	const n = 60
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.create(api.InstanceCreateRequest{}).ID
	}
	machines := make([]string, n)
	for i, id := range ids {
		machines[i] = h.waitPhase(id, api.PhaseRunning).Status.Machine.ID
	}
	gets, lists := h.cloud.Calls(provider.VerbGet), h.cloud.Calls(provider.VerbList)
	queued, err := h.rec.Resync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := h.cloud.Calls(provider.VerbGet) - gets; queued != 0 || got != 0 {
		t.Fatalf("resync of %d settled instances queued %d and cost %d gets, want 0 and 0", n, queued, got)
	}
	if got := h.cloud.Calls(provider.VerbList) - lists; got != 1 {
		t.Fatalf("resync listed %d pages, want 1", got)
	}

	h.cloud.Remove(machines[0])
	h.cloud.SetState(machines[1], api.StateStopped)
	h.cloud.ReuseID(machines[2], "inst_someone-else")
	if queued, err = h.rec.Resync(context.Background()); err != nil || queued != 3 {
		t.Fatalf("resync after 3 machines changed queued %d (%v), want 3", queued, err)
	}
	for i := range 3 {
		h.waitFor(ids[i], "repaired", func(inst *api.Instance, err error) bool {
			return err == nil && inst.Status.Phase == api.PhaseRunning && inst.Status.ObservedGeneration == inst.Generation &&
				h.cloud.ByKey()[ids[i]].State == api.StateRunning
		})
	}
	if got := len(h.cloud.ByKey()); got != n+1 {
		t.Fatalf("%d machines, want %d (one per instance, and the other key's)", got, n+1)
	}
}

func TestPowerLevelsAndOneShotOperations(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{})
	h.waitPhase(inst.ID, api.PhaseRunning)

	var out api.Instance
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOff}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Generation != 2 || out.Desired.Power != api.PowerOff {
		t.Fatalf("power off reply: gen %d desired %+v", out.Generation, out.Desired)
	}
	h.waitPhase(inst.ID, api.PhaseStopped)
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOn}, &out); err != nil {
		t.Fatal(err)
	}
	h.waitPhase(inst.ID, api.PhaseRunning)
	powerCalls := h.cloud.Calls(provider.VerbPower)

	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, &out); err != nil {
		t.Fatal(err)
	}
	opID := out.Desired.Operation.ID
	done := h.waitFor(inst.ID, "reset done", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.LastOperation != nil && i.Status.LastOperation.ID == opID && i.Status.LastOperation.State == api.OperationSucceeded
	})
	if _, err := h.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.waitPhase(inst.ID, api.PhaseRunning)
	time.Sleep(5 * h.opts.PollInterval)
	if got := h.cloud.Calls(provider.VerbPower) - powerCalls; got != 1 {
		t.Fatalf("reset sent %d times, want exactly once", got)
	}
	if done.Status.LastOperation.Action != api.ActionReset || done.Status.LastOperation.FinishedAt == nil {
		t.Fatalf("operation status: %+v", done.Status.LastOperation)
	}

	if err := h.call("reinstall", api.InstanceReinstallRequest{ID: inst.ID, Image: "ubuntu-24.04"}, &out); err != nil {
		t.Fatal(err)
	}
	opID = out.Desired.Operation.ID
	re := h.waitFor(inst.ID, "reinstalled", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.LastOperation != nil && i.Status.LastOperation.ID == opID && i.Status.LastOperation.State == api.OperationSucceeded
	})
	if re.Image != "ubuntu-24.04" || h.cloud.Calls(provider.VerbReinstall) != 1 {
		t.Fatalf("reinstall: image %q calls %d", re.Image, h.cloud.Calls(provider.VerbReinstall))
	}
}

func TestIdempotentCreate(t *testing.T) {
	h := newHarness(t, fastOptions())
	req := api.InstanceCreateRequest{Name: "db", IdempotencyKey: "deploy-42"}
	a := h.create(req)
	b := h.create(req)
	if a.ID != b.ID {
		t.Fatalf("same key made %s and %s", a.ID, b.ID)
	}
	req.Name = "other"
	err := h.call("create", withPool(req, h.pool.ID), nil)
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeConflict || ce.Path() != "idempotencyKey" {
		t.Fatalf("reused key with another request: %v", err)
	}
	h.waitPhase(a.ID, api.PhaseRunning)
	if n := len(h.cloud.Machines()); n != 1 {
		t.Fatalf("%d machines for one idempotency key", n)
	}
}

// A create replayed with the key of an instance deleted since answers
// INVALID_STATE naming it, never a new machine (issue 20).
func TestReplayedCreateOfDeletedInstance(t *testing.T) {
	h := newHarness(t, fastOptions())
	req := api.InstanceCreateRequest{Name: "db", IdempotencyKey: "deploy-43"}
	a := h.create(req)
	h.waitPhase(a.ID, api.PhaseRunning)
	if err := h.call("delete", map[string]any{"id": a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(a.ID)
	err := h.call("create", withPool(req, h.pool.ID), nil)
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidState || ce.Path() != "idempotencyKey" || ce.Details.ID != a.ID {
		t.Fatalf("replayed create of deleted %s = %v, want INVALID_STATE path idempotencyKey naming it", a.ID, err)
	}
	var page api.List[api.Instance]
	if err := h.call("list", map[string]any{}, &page); err != nil || len(page.Items) != 0 {
		t.Fatalf("instances after the replay: %d, %v; want none", len(page.Items), err)
	}
}

func withPool(req api.InstanceCreateRequest, pool string) api.InstanceCreateRequest {
	req.PoolID, req.Flavor = pool, "small"
	return req
}

func TestListFiltersAndPages(t *testing.T) {
	h := newHarness(t, fastOptions())
	for range 5 {
		h.waitPhase(h.create(api.InstanceCreateRequest{}).ID, api.PhaseRunning)
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		var p api.List[api.Instance]
		if err := h.call("list", map[string]any{"limit": 2, "cursor": cursor, "phase": api.PhaseRunning, "poolId": h.pool.ID}, &p); err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Items) > 2 {
			t.Fatalf("page of %d items with limit 2", len(p.Items))
		}
		for _, i := range p.Items {
			if seen[i.ID] {
				t.Fatalf("%s listed twice", i.ID)
			}
			seen[i.ID] = true
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 5 || pages != 3 {
		t.Fatalf("listed %d instances in %d pages, want 5 in 3", len(seen), pages)
	}
	var none api.List[api.Instance]
	if err := h.call("list", map[string]any{"phase": api.PhaseStopped}, &none); err != nil || len(none.Items) != 0 {
		t.Fatalf("phase filter: %d items, err %v", len(none.Items), err)
	}
}

// Several passes racing on one instance (a newer work message delivered
// while an older one runs) still send a one-shot operation exactly once.
func TestConcurrentPassesRunAnOperationOnce(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{})
	h.waitPhase(inst.ID, api.PhaseRunning)
	powerCalls := h.cloud.Calls(provider.VerbPower)
	var out api.Instance
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, &out); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 { // passes at once, as replicas or replaced messages would run them
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = h.rec.reconcile(context.Background(), h.rec.log, tenant, inst.ID)
		}()
	}
	wg.Wait()
	h.waitFor(inst.ID, "reset done", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.LastOperation != nil && i.Status.LastOperation.State == api.OperationSucceeded
	})
	if got := h.cloud.Calls(provider.VerbPower) - powerCalls; got != 1 {
		t.Fatalf("reset sent %d times by racing passes, want once", got)
	}
}

// An operation found Executing is left alone while its claim may still be
// running the call, and becomes Unknown (never resent) once the claim has
// outlived the call timeout: the claiming pass died after it may have sent it.
func TestExecutingOperationClaimIsALease(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.waitPhase(h.create(api.InstanceCreateRequest{}).ID, api.PhaseRunning)
	powerCalls := h.cloud.Calls(provider.VerbPower)
	claim := func(startedAt time.Time) {
		t.Helper()
		h.updateRecord(inst.ID, func(rec *api.Instance) {
			op := &api.Operation{ID: api.NewID(api.PrefixOperation), Action: api.ActionReset, RequestedAt: startedAt}
			rec.Desired.Operation = op
			rec.Status.LastOperation = &api.OperationStatus{ID: op.ID, Action: op.Action, State: api.OperationExecuting, StartedAt: startedAt}
		})
	}
	state := func() api.OperationState {
		t.Helper()
		got, err := h.get(inst.ID)
		if err != nil || got.Status.LastOperation == nil {
			t.Fatalf("get: %+v, %v", got, err)
		}
		return got.Status.LastOperation.State
	}

	claim(time.Now().UTC())
	if _, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, inst.ID); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != api.OperationExecuting {
		t.Fatalf("a fresh claim became %s, want it left Executing", got)
	}

	claim(time.Now().UTC().Add(-h.opts.CallTimeout - claimMargin - time.Second))
	if _, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, inst.ID); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != api.OperationUnknown {
		t.Fatalf("a stale claim became %s, want %s", got, api.OperationUnknown)
	}
	if got := h.cloud.Calls(provider.VerbPower) - powerCalls; got != 0 {
		t.Fatalf("the claimed reset was sent %d times by other passes, want 0", got)
	}
}

func TestSecondOperationRefusedWhilePending(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI) // nothing runs the first operation
	inst := h.create(api.InstanceCreateRequest{})
	if err := h.call("reinstall", api.InstanceReinstallRequest{ID: inst.ID, Image: "debian-11"}, nil); err != nil {
		t.Fatal(err)
	}
	err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, nil)
	if !api.IsCode(err, api.CodeInvalidState) {
		t.Fatalf("reset while a reinstall is pending: %v, want INVALID_STATE", err)
	}
	if err := h.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOff}, nil); err != nil {
		t.Fatalf("power level while an operation is pending: %v", err)
	}
}

// An instance whose create the provider refuses (here: an offer it does
// not have) is deleted without a machine, not retried forever.
// A repeated delete answers the record as it is: no new generation.
func TestRepeatedDeleteAnswersTheSameRecord(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI) // the record stays while we look at it
	inst := h.create(api.InstanceCreateRequest{})
	var first, second api.Instance
	if err := h.call("delete", api.IDRequest{ID: inst.ID}, &first); err != nil {
		t.Fatal(err)
	}
	if err := h.call("delete", api.IDRequest{ID: inst.ID}, &second); err != nil {
		t.Fatal(err)
	}
	if first.Generation != 2 || second.Generation != 2 || second.Status.Phase != api.PhaseDeleting ||
		!second.DeletionRequestedAt.Equal(*first.DeletionRequestedAt) {
		t.Fatalf("deletes answered generation %d then %d (phase %s), want 2 twice with the first deletion time",
			first.Generation, second.Generation, second.Status.Phase)
	}
}

func TestDeleteFinishesWhenCreateIsRefused(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{Flavor: "bogus"})
	h.waitPhase(inst.ID, api.PhaseFailed)
	if err := h.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
		t.Fatal(err)
	}
	h.waitGone(inst.ID)
	if n := len(h.cloud.Machines()); n != 0 {
		t.Fatalf("%d machines", n)
	}
}

// TestPermanentRefusalTable: the reconciler fails an instance on what the
// provider marks permanent (details.permanent, also decoded from a reply)
// and on terminal codes, never on an API status or code of its own
// reading: which API answers never pass is each provider's mapping
// (TestMapFailure in provider-hetzner, TestFailureTable in
// provider-proxmox).
func TestPermanentRefusalTable(t *testing.T) {
	permanent := func(ce *api.ComputeError) *api.ComputeError { ce.Details.Permanent = true; return ce }
	cases := []struct {
		err  *api.ComputeError
		want bool
	}{
		{permanent(api.ProviderError(422, "invalid_input", "image not found")), true},
		{permanent(api.ProviderError(422, "unsupported_error", "not for this type")), true},
		{permanent(api.ProviderError(400, "json_error", "bad body")), true},
		{&api.ComputeError{Code: api.CodeProviderError, Details: api.ErrorDetails{Status: new(422), Code: new("invalid_input"), Permanent: true}}, true},
		{permanent(api.ProviderError(409, "uniqueness_error", "name taken by another key")), true},
		{api.Errorf(api.CodeInvalidInput, "no template"), true},
		{api.ProviderError(422, "invalid_input", "image not found"), false},
		{api.ProviderError(422, "service_error", "try again"), false},
		{api.ProviderError(403, "resource_limit_exceeded", "quota"), false},
		{api.ProviderError(409, "uniqueness_error", "name taken, not marked permanent"), false},
		{api.ProviderError(409, "conflict", "try again"), false},
		{api.ProviderError(412, "resource_unavailable", "no capacity"), false},
		{api.ProviderError(423, "locked", "busy"), false},
		{api.ProviderError(503, "unavailable", "down"), false},
		{api.ProviderError(0, "unreachable", "dropped"), false},
		{api.Errorf(api.CodeUnavailable, "no reply"), false},
	}
	for _, c := range cases {
		if got := permanentRefusal(c.err); got != c.want {
			t.Errorf("permanentRefusal(%v %v) = %v, want %v", c.err, c.err.Details, got, c.want)
		}
	}
}

// A create the provider refuses as permanent (Hetzner's 422 for an
// unknown image) fails the instance after one call instead of retrying
// forever.
func TestRefusedCreateFailsTheInstance(t *testing.T) {
	h := newHarness(t, fastOptions())
	refusal := api.ProviderError(422, "invalid_input", "image %q not found", "debian-99")
	refusal.Details.Permanent = true
	h.cloud.FailNext(provider.VerbCreate, refusal)
	inst := h.create(api.InstanceCreateRequest{})
	failed := h.waitPhase(inst.ID, api.PhaseFailed)
	c := providerCondition(failed)
	if c == nil || c.Reason != api.ReasonOf(api.CodeProviderError) || c.RetryAt != nil {
		t.Fatalf("condition %+v, want PROVIDER_ERROR without a retry", c)
	}
	time.Sleep(100 * time.Millisecond) // several retry periods of fastOptions
	if got := h.cloud.Calls(provider.VerbCreate); got != 1 {
		t.Fatalf("create calls = %d, want 1", got)
	}
}

func TestCreateRefusedTable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{api.Errorf(api.CodeInvalidInput, "no template"), true},
		{api.ProviderError(422, "invalid_input", "bad image"), true},
		{api.ProviderError(409, "uniqueness_error", "name taken"), true},
		{api.Errorf(api.CodeCapacityUnavailable, "every slot of the key holds another VM"), true},
		{&api.ComputeError{Code: api.CodeProviderError, Details: api.ErrorDetails{Status: new(404)}}, true},
		{api.ProviderError(429, "rate_limit_exceeded", "slow down"), false},
		{api.ProviderError(408, "timeout", "timeout"), false},
		{api.ProviderError(503, "unavailable", "down"), false},
		{api.ProviderError(0, "unreachable", "dropped"), false},
		{api.Errorf(api.CodeUnavailable, "no reply"), false},
		{api.RateLimited(time.Second, "later"), false},
	}
	for _, c := range cases {
		if got := createRefused(c.err); got != c.want {
			t.Errorf("createRefused(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
