package reconciler

import (
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	hetzner "better-compute.io/compute/services/provider-hetzner"
)

// A create Hetzner refuses for the project's quota (403
// resource_limit_exceeded) gets its own condition reason, QuotaExceeded,
// and is retried after the provider's long wait, not in a tight loop: one
// POST in many retry periods of fastOptions.
func TestHetznerQuotaIsRetriedLate(t *testing.T) {
	h := newHarness(t, fastOptions())
	emu := h.useHetzner()
	e := emu.Emulator()
	e.SetServerLimit(1)
	first := h.create(api.InstanceCreateRequest{Name: "web-1"})
	h.waitPhase(first.ID, api.PhaseRunning)
	posts := e.Calls("POST /servers")

	second := h.create(api.InstanceCreateRequest{Name: "web-2"})
	refused := h.waitFor(second.ID, "a QuotaExceeded condition", func(inst *api.Instance, err error) bool {
		c := providerCondition(inst)
		return err == nil && c != nil && c.Reason == api.ReasonQuotaExceeded
	})
	c := providerCondition(refused)
	if c.RetryAt == nil || c.RetryAt.Sub(h.clock.Now()) < hetzner.QuotaRetryAfter-time.Minute {
		t.Fatalf("condition %+v: want a retry about %s away", c, hetzner.QuotaRetryAfter)
	}
	if ready := statusCondition(&refused.Status, api.ConditionReady); ready == nil || ready.Reason != api.ReasonQuotaExceeded {
		t.Fatalf("ready condition %+v, want reason QuotaExceeded", ready)
	}
	time.Sleep(300 * time.Millisecond) // many retry periods of fastOptions
	if got := e.Calls("POST /servers") - posts; got != 1 {
		t.Fatalf("%d POST /servers for the refused instance, want 1 (no retry before the wait)", got)
	}
}
