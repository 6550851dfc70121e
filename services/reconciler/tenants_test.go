package reconciler

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// otherTenant is a second tenant beside the harness's own (tenant).
const otherTenant = "globex"

// createAs creates one instance of tenantID in pool (flavor small).
func (h *harness) createAs(tenantID string, pool api.Pool) *api.Instance {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var inst api.Instance
	req := api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small"}
	if err := bus.Call(ctx, h.env.NC, bus.Command(tenantID, bus.ResourceInstances, "create"), req, &inst); err != nil {
		h.t.Fatalf("create as %s: %v", tenantID, err)
	}
	return &inst
}

// runningEvents delivers the id of every instance of tenantID whose
// running event is published, from now until the test ends.
func (h *harness) runningEvents(tenantID string) <-chan string {
	h.t.Helper()
	running := make(chan string, 1024)
	sub, err := h.env.NC.Subscribe(bus.Event(tenantID, bus.ResourceInstances, "*", "running"), func(m *nats.Msg) {
		var ev api.Event
		if json.Unmarshal(m.Data, &ev) == nil {
			select {
			case running <- ev.ResourceID:
			default: // the test reads only the ones it waits for
			}
		}
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return running
}

// waitRunning waits for id's running event on running (at most within).
func (h *harness) waitRunning(running <-chan string, id string, within time.Duration) {
	h.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case got := <-running:
			if got == id {
				return
			}
		case <-deadline:
			h.t.Fatalf("instance %s not running within %v", id, within)
		}
	}
}
