package poolctl

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Scale 0 → 50 → 10 → 30 on the Hetzner emulator ends with exactly 30
// machines, each the machine of one recorded instance of the pool, and
// every instance in one slot of the controller's record.
func TestScaleZeroFiftyTenThirty(t *testing.T) {
	h := newHarness(t)
	h.startController(fastOptions("c1"))
	p := h.scale(0)
	h.waitSettled(0, p.Revision, 40*time.Second)
	for _, n := range []int{50, 10, 30} {
		p = h.scale(n)
		h.waitSettled(n, p.Revision, 180*time.Second)
		t.Logf("size %d: settled, next ordinal %d", n, h.control().NextOrdinal)
	}
	h.checkNoOrphans()
	t.Logf("server creates sent to the emulator: %d for 70 instances made (%.2f per instance)",
		h.emu.Emulator().Calls("POST /servers"), float64(h.emu.Emulator().Calls("POST /servers"))/70)
	// 50 + 20 made, never one more: every ordinal went to one instance
	if got := h.control().NextOrdinal; got != 70 {
		t.Errorf("ordinals used: %d, want 70 (50 made, then 20)\n%s", got, h.dump())
	}
	st, err := h.cl.Pools.Get(context.Background(), h.pool.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status == nil || st.Status.Replicas != 30 || st.Status.Ready != 30 || st.Status.Rollout != api.RolloutComplete {
		t.Errorf("pools.get status: %+v", st.Status)
	}
}

// A rolling template change of 20 instances (maxSurge 1, maxUnavailable 1)
// never has more than maxUnavailable of the 20 not Running: phases sampled
// during the rollout. It ends with every machine on the new image.
func TestRollingDeployKeepsAvailability(t *testing.T) {
	h := newHarness(t)
	h.startController(fastOptions("c1"))
	h.update(api.PoolUpdateRequest{Sizes: map[string]int{"small": 20}, Rollout: &api.PoolRollout{MaxSurge: 1, MaxUnavailable: 1}})
	h.waitSettled(20, 1, 180*time.Second)

	// Every phase change of every instance is an event: the count of
	// instances down is sampled at each one.
	phases := map[string]api.Phase{}
	for _, i := range h.instances() {
		phases[i.ID] = i.Status.Phase
	}
	var (
		mu      sync.Mutex
		worst   int
		samples int
	)
	sub, err := h.env.NC.Subscribe(bus.EventsOf(tenant), func(m *nats.Msg) {
		var e api.Event
		if json.Unmarshal(m.Data, &e) != nil || e.Resource != bus.ResourceInstances || e.Phase == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		phases[e.ResourceID] = e.Phase
		if e.Type == api.EventDeleted {
			delete(phases, e.ResourceID)
		}
		running := 0
		for _, ph := range phases {
			if ph == api.PhaseRunning {
				running++
			}
		}
		worst = max(worst, 20-running)
		samples++
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	p := h.update(api.PoolUpdateRequest{Template: &api.PoolTemplate{Image: "debian-12", Labels: map[string]string{"app": "web"}}})
	if p.Revision != 2 {
		t.Fatalf("revision after the template change: %d, want 2", p.Revision)
	}
	h.waitSettled(20, 2, 240*time.Second)
	if err := h.env.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d samples during the rollout; at worst %d of 20 down", samples, worst)
	if worst > 1 {
		t.Errorf("at worst %d instances were not Running during the rollout, maxUnavailable is 1", worst)
	}
	if imgs := h.images(); imgs["debian-12"] != 20 {
		t.Errorf("images after the deploy: %v, want 20 debian-12", imgs)
	}
	h.checkNoOrphans()
}

// Deploy then rollback of a 10-instance pool ends with every machine on
// the first revision's image; the rollback is revision 3, of revision 1's
// template.
func TestDeployThenRollback(t *testing.T) {
	h := newHarness(t)
	h.startController(fastOptions("c1"))
	h.update(api.PoolUpdateRequest{Sizes: map[string]int{"small": 10}, Rollout: &api.PoolRollout{MaxSurge: 2, MaxUnavailable: 0}})
	h.waitSettled(10, 1, 120*time.Second)
	h.update(api.PoolUpdateRequest{Template: &api.PoolTemplate{Image: "debian-12"}})
	h.waitSettled(10, 2, 180*time.Second)
	if imgs := h.images(); imgs["debian-12"] != 10 {
		t.Fatalf("images after the deploy: %v", imgs)
	}
	p, err := h.cl.Pools.Rollback(context.Background(), api.PoolRollbackRequest{ID: h.pool.ID})
	if err != nil {
		t.Fatal(err)
	}
	if p.Revision != 3 || p.Revisions[len(p.Revisions)-1].RollbackOf != 1 {
		t.Fatalf("rollback made revision %d (%+v), want 3 of revision 1", p.Revision, p.Revisions)
	}
	h.waitSettled(10, 3, 180*time.Second)
	if imgs := h.images(); imgs["ubuntu-24.04"] != 10 || len(imgs) != 1 {
		t.Errorf("images after the rollback: %v, want all 10 on ubuntu-24.04 (revision 1: the flavor's image)", imgs)
	}
	h.checkNoOrphans()
}

// Two controllers on one pool: one holds the lease and makes every
// instance, the other never acts.
func TestLeaseOneControllerActs(t *testing.T) {
	h := newHarness(t)
	o1, o2 := fastOptions("c1"), fastOptions("c2")
	o1.LeaseDuration, o2.LeaseDuration = 30*time.Second, 30*time.Second
	c1, c2 := h.startController(o1), h.startController(o2)
	h.scale(8)
	h.waitSettled(8, 1, 120*time.Second)
	a1, a2 := c1.Actions(), c2.Actions()
	t.Logf("actions: c1 %d, c2 %d; holder %s", a1, a2, h.control().Holder)
	if (a1 == 0) == (a2 == 0) {
		t.Errorf("actions c1 %d, c2 %d: want exactly one controller acting", a1, a2)
	}
	if a1+a2 != 8 {
		t.Errorf("%d creates sent, want 8", a1+a2)
	}
	h.checkNoOrphans()
}

// hardStopDuringScaleUp scales a pool to 20 with a controller that dies
// (its connection gone, its lease kept) after its slots were written and 10
// creates made their instances, before the others were sent and before any
// answer was recorded.
func hardStopDuringScaleUp(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	nc := h.env.Connect(t)
	closed := make(chan struct{})
	o := fastOptions("dying")
	// Slots 0-9 are created; slot 10 waits until their records exist, then
	// the process is gone (no more calls, no lease release): slots 10-19
	// were written but their creates never sent, and no answer of 0-9 was
	// recorded.
	o.Hooks.BeforeCreate = func(_ string, ordinal int64) {
		switch {
		case ordinal == 10:
			deadline := time.Now().Add(10 * time.Second)
			for len(h.instances()) < 10 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			nc.Close()
			close(closed)
		case ordinal > 10:
			<-closed
		}
	}
	h.startControllerOn(nc, o)
	h.scale(20)
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatalf("the dying controller never reached slot 10:\n%s", h.dump())
	}
	time.Sleep(200 * time.Millisecond) // the dead one's last writes fail on its closed connection
	rec := h.control()
	pending := 0
	for _, s := range rec.Slots {
		if s.InstanceID == "" {
			pending++
		}
	}
	t.Logf("after the stop: %d slots, %d without an instance id, %d instance records", len(rec.Slots), pending, len(h.instances()))
	return h
}

// After that stop the next controller takes over once the lease expires,
// sends the missing creates under the slots' keys and makes no surplus.
func TestTakeoverAfterHardStopMakesNoSurplus(t *testing.T) {
	h := hardStopDuringScaleUp(t)
	h.startController(fastOptions("heir"))
	h.waitSettled(20, 1, 180*time.Second)
	h.checkNoOrphans()
	if got := h.control().NextOrdinal; got != 20 {
		t.Errorf("ordinals used: %d, want 20: the heir re-sent the dead one's creates instead of making more", got)
	}
}

// The same stop, then a scale-down to 5 before the heir starts: the heir
// deletes slots whose creates never answered; it sends them first, so the
// instances the dead one's creates made are found and deleted, none left
// behind uncounted.
func TestScaleDownOfUnansweredCreatesLeavesNoOrphan(t *testing.T) {
	h := hardStopDuringScaleUp(t)
	h.scale(5)
	h.startController(fastOptions("heir"))
	h.waitSettled(5, 1, 180*time.Second)
	h.checkNoOrphans()
	if got := h.control().NextOrdinal; got != 20 {
		t.Errorf("ordinals used: %d, want 20", got)
	}
}

// A Failed instance is replaced: the first create the emulator answers
// with a permanent refusal, so one of three instances fails for good; the
// controller deletes it and makes a fourth, under a new ordinal.
func TestFailedInstanceIsReplaced(t *testing.T) {
	h := newHarness(t)
	h.emu.Emulator().FailNext("POST /servers", 1, 422, "invalid_input", "image not available for this server type")
	h.startController(fastOptions("c1"))
	h.scale(3)
	h.waitSettled(3, 1, 120*time.Second)
	h.checkNoOrphans()
	if got := h.control().NextOrdinal; got != 4 {
		t.Errorf("ordinals used: %d, want 4 (three, and the failed one's replacement)\n%s", got, h.dump())
	}
}
