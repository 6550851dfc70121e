package reconciler

import (
	"context"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// After the NATS server restarts (same store, same port), every replica
// consumes work again, not only one of them.
func TestEveryReplicaConsumesAfterAServerRestart(t *testing.T) {
	h := newHarness(t, fastOptions())
	h.rec.Stop()
	var creates [2]atomic.Int32
	for i := range creates {
		o := fastOptions()
		o.Hooks.AfterProviderCreate = func(string) { creates[i].Add(1) }
		h.opts = o
		h.startReconciler(h.env.Connect(t))
	}
	h.waitPhase(h.create(api.InstanceCreateRequest{}).ID, api.PhaseRunning)

	restartServer(t, h)
	time.Sleep(3 * time.Second) // reconnected

	before := [2]int32{creates[0].Load(), creates[1].Load()}
	ids := make([]string, 40)
	for i := range ids {
		var inst api.Instance
		if err := h.callRetry("create", api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small"}, &inst); err != nil {
			t.Fatal(err)
		}
		ids[i] = inst.ID
	}
	h.waitPhases(ids, api.PhaseRunning, 2*time.Minute)
	for i := range creates {
		if got := creates[i].Load() - before[i]; got == 0 {
			t.Errorf("replica %d sent no create after the restart (the other sent %d)", i, creates[1-i].Load()-before[1-i])
		}
	}
}

// restartServer stops the harness's NATS server and starts it again on the
// same store and port, as a restart of nats-server would.
func restartServer(t *testing.T, h *harness) {
	t.Helper()
	storeDir := h.env.Server.JetStreamConfig().StoreDir
	u, err := url.Parse(h.env.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	h.env.Server.Shutdown()
	h.env.Server.WaitForShutdown()
	time.Sleep(2 * time.Second) // the clients notice
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: storeDir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	h.env.Server = srv
}

// On a single server the work stream acknowledges a message before it is
// on disk (bus.Stores.WorkFlushedAsync), so a server crash can lose work
// it acknowledged. The instance is recorded (the buckets are synced); the
// reconciler queues it again by resyncing once it has reconnected, not a
// ResyncInterval later (here the periodic resync is off).
func TestWorkLostByTheServerIsQueuedAfterReconnecting(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	if !h.env.Stores.WorkFlushedAsync() {
		t.Fatal("a single server's work stream is not flushed asynchronously")
	}
	id := h.create(api.InstanceCreateRequest{}).ID
	// What a crash within the flush window loses: the instance's work.
	ctx := context.Background()
	work, err := h.env.Stores.JS.Stream(ctx, bus.StreamWork)
	if err != nil {
		t.Fatal(err)
	}
	if err := work.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	h.startReconciler(h.env.Connect(t))
	time.Sleep(time.Second)
	if rec := h.record(id); rec.Status.ObservedGeneration != 0 {
		t.Fatalf("the instance was reconciled without its work (observed generation %d): the test shows nothing", rec.Status.ObservedGeneration)
	}
	restartServer(t, h)
	h.waitPhase(id, api.PhaseRunning)
}

// Queueing the unsettled instances after reconnecting sends the provider
// nothing: a restart that lost no work, with 20 settled instances, costs
// no list, get or create.
func TestReconnectQueuesWithoutProviderCalls(t *testing.T) {
	h := newHarness(t, fastOptions())
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = h.create(api.InstanceCreateRequest{}).ID
	}
	h.waitPhases(ids, api.PhaseRunning, time.Minute)
	time.Sleep(time.Second) // the last passes end
	verbs := []string{provider.VerbList, provider.VerbGet, provider.VerbCreate}
	before := map[string]int{}
	for _, v := range verbs {
		before[v] = h.cloud.Calls(v)
	}
	restartServer(t, h)
	time.Sleep(4 * time.Second) // reconnected, walked
	for _, v := range verbs {
		if n := h.cloud.Calls(v) - before[v]; n > 0 {
			t.Errorf("a restart that lost no work cost %d provider %s calls", n, v)
		}
	}
}

// Two server crashes a few seconds apart, each losing a create's work:
// the second's instance is queued again once the walk's gap
// (reconnectQueueGap) has passed, as the first's was.
func TestSecondServerCrashLosingWorkIsQueuedToo(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	ctx := t.Context()
	purge := func() { // what each crash loses: the work just queued
		work, err := h.env.Stores.JS.Stream(ctx, bus.StreamWork)
		if err != nil {
			t.Fatal(err)
		}
		if err := work.Purge(ctx); err != nil {
			t.Fatal(err)
		}
	}
	first := h.create(api.InstanceCreateRequest{}).ID
	purge()
	h.startReconciler(h.env.Connect(t))
	restartServer(t, h)
	h.waitPhase(first, api.PhaseRunning)
	second := h.create(api.InstanceCreateRequest{}).ID
	purge()
	restartServer(t, h)
	h.waitPhase(second, api.PhaseRunning)
}
