package reconciler

import (
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
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

	storeDir := h.env.Server.JetStreamConfig().StoreDir
	u, err := url.Parse(h.env.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	h.env.Server.Shutdown()
	h.env.Server.WaitForShutdown()
	time.Sleep(2 * time.Second) // the replicas notice
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: storeDir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
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
