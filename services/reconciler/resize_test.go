package reconciler

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// setFlavor changes the instance's flavor through instances.update.
func (h *harness) setFlavor(id, flavor string) *api.Instance {
	h.t.Helper()
	inst, err := h.update(api.InstanceUpdateRequest{ID: id, Flavor: flavor})
	if err != nil {
		h.t.Fatal(err)
	}
	return inst
}

// addFlavors adds flavors to the harness pool (in KV).
func (h *harness) addFlavors(flavors ...api.Flavor) {
	h.t.Helper()
	p, _, err := h.env.Stores.PoolTable().Mutate(context.Background(), tenant, h.pool.ID, func(p *api.Pool) error {
		p.Flavors = append(p.Flavors, flavors...)
		p.Version++
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.pool = p
}

// waitResized waits until the instance observed its generation and its
// latest resize settled.
func (h *harness) waitResized(id string) *api.Instance {
	h.t.Helper()
	return h.waitFor(id, "resize settled and generation observed", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.ObservedGeneration == i.Generation && i.Status.Resize != nil &&
			i.Status.Resize.State != api.ResizeExecuting && i.Status.Resize.Generation == i.Generation
	})
}

func statusJSON(i *api.Instance) string {
	b, _ := json.MarshalIndent(i.Status, "", "  ")
	return string(b)
}

// A new flavor is a resize: one provider resize, the machine on the new
// offer, status.flavor and the Resized condition say so, and
// observedGeneration catches up. A later flavor with a smaller disk than
// the grown one is refused (INVALID_INPUT, path flavor), once, and the
// instance says the machine stays on the large flavor.
func TestResizeMovesTheMachineOnceAndRefusesASmallerDisk(t *testing.T) {
	h := newHarness(t, fastOptions())
	h.addFlavors(api.Flavor{Name: "large", OfferID: "large", GrowDisk: true})
	inst := h.create(api.InstanceCreateRequest{})
	h.waitPhase(inst.ID, api.PhaseRunning)

	h.setFlavor(inst.ID, "large")
	got := h.waitResized(inst.ID)
	if got.Status.Resize.State != api.ResizeSucceeded || got.Status.Flavor != "large" || got.Status.Phase != api.PhaseRunning {
		t.Fatalf("resize to large did not succeed:\n%s", statusJSON(got))
	}
	if c := condition(got, api.ConditionResized); c == nil || c.Status != api.ConditionTrue {
		t.Fatalf("Resized condition not True:\n%s", statusJSON(got))
	}
	if m := h.cloud.Machines(); len(m) != 1 || m[0].OfferID != "large" {
		t.Fatalf("machines after resize: %+v", m)
	}
	if n := h.cloud.Calls(provider.VerbResize); n != 1 {
		t.Fatalf("resize calls: %d, want 1", n)
	}

	h.setFlavor(inst.ID, "small")
	got = h.waitResized(inst.ID)
	rs := got.Status.Resize
	if rs.State != api.ResizeFailed || rs.Code != api.CodeInvalidInput || rs.Path != "flavor" ||
		got.Status.Flavor != "large" || got.Status.Phase != api.PhaseRunning {
		t.Fatalf("resize to a smaller disk not refused as expected:\n%s", statusJSON(got))
	}
	if c := condition(got, api.ConditionResized); c == nil || c.Status != api.ConditionFalse || c.Reason != api.ReasonOf(api.CodeInvalidInput) {
		t.Fatalf("Resized condition:\n%s", statusJSON(got))
	}
	if _, err := h.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // many passes of fastOptions
	if n := h.cloud.Calls(provider.VerbResize); n != 2 {
		t.Fatalf("resize calls: %d, want 2 (the refusal is not repeated)", n)
	}
}

// A resize whose claim was never finished (its pass died after the call
// may have been sent) is not sent again once its lease is over: the
// machine is re-observed, and the resize is Succeeded when the machine is
// on the new offer, Unknown (machine on its old flavor) otherwise.
func TestInterruptedResizeIsReobservedNotRepeated(t *testing.T) {
	for _, landed := range []bool{true, false} {
		t.Run(map[bool]string{true: "landed", false: "not-landed"}[landed], func(t *testing.T) {
			h := newHarness(t, fastOptions(), startAPI)
			h.addFlavors(api.Flavor{Name: "large", OfferID: "large"})
			inst := h.create(api.InstanceCreateRequest{})
			for range 4 {
				h.pass(inst.ID)
			}
			inst = h.setFlavor(inst.ID, "large")
			machine := h.record(inst.ID).Status.Machine
			started := h.rec.now()
			h.updateRecord(inst.ID, func(i *api.Instance) { // a pass claimed it and died
				i.Status.Flavor = "small"
				i.Status.Resize = &api.ResizeStatus{Flavor: "large", FromFlavor: "small", OfferID: "large",
					Generation: i.Generation, State: api.ResizeExecuting, StartedAt: started}
			})
			if landed {
				h.cloud.SetOffer(machine.ID, "large")
			}
			h.pass(inst.ID) // within the lease: nothing
			if n := h.cloud.Calls(provider.VerbResize); n != 0 {
				t.Fatalf("a pass within the lease sent %d resizes", n)
			}
			h.clock.Advance(h.rec.resizeTimeout() + claimMargin + time.Second)
			for range 4 {
				h.pass(inst.ID)
			}
			got := h.record(inst.ID)
			want, flavor := api.ResizeUnknown, "small"
			if landed {
				want, flavor = api.ResizeSucceeded, "large"
			}
			if got.Status.Resize.State != want || got.Status.Flavor != flavor {
				t.Fatalf("want resize %s on flavor %s:\n%s", want, flavor, statusJSON(got))
			}
			if n := h.cloud.Calls(provider.VerbResize); n != 0 {
				t.Fatalf("the interrupted resize was sent again (%d calls)", n)
			}
		})
	}
}

// pass runs one reconcile pass of the instance (harnesses of startAPI).
func (h *harness) pass(id string) {
	h.t.Helper()
	if _, err := h.rec.reconcile(context.Background(), h.rec.log, tenant, id); err != nil {
		h.t.Fatal(err)
	}
}
