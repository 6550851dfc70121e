package reconciler

import (
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// instances.metrics validates its window (INVALID_INPUT naming the
// field) and answers the provider's series of the instance's machine.
func TestInstanceMetrics(t *testing.T) {
	h := newHarness(t, fastOptions())
	inst := h.create(api.InstanceCreateRequest{})
	h.waitPhase(inst.ID, api.PhaseRunning)
	now := h.rec.now()
	hour := api.MetricsWindow{Type: api.MetricsCPU, From: now.Add(-time.Hour), To: now, Step: 60}
	bad := []struct {
		path string
		w    func(api.MetricsWindow) api.MetricsWindow
	}{
		{"type", func(w api.MetricsWindow) api.MetricsWindow { w.Type = "memory"; return w }},
		{"from", func(w api.MetricsWindow) api.MetricsWindow { w.From = w.To; return w }},
		{"from", func(w api.MetricsWindow) api.MetricsWindow { w.From = now.Add(-31 * 24 * time.Hour); return w }},
		{"to", func(w api.MetricsWindow) api.MetricsWindow { w.To = time.Time{}; return w }},
		{"step", func(w api.MetricsWindow) api.MetricsWindow { w.Step = -1; return w }},
		{"step", func(w api.MetricsWindow) api.MetricsWindow { w.Step = 1; return w }}, // 3600 points
	}
	for _, b := range bad {
		err := h.call("metrics", api.InstanceMetricsRequest{ID: inst.ID, MetricsWindow: b.w(hour)}, nil)
		if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != b.path {
			t.Errorf("window refused for %s: got %v (path %q)", b.path, err, ce.Path())
		}
	}
	if err := h.call("metrics", api.InstanceMetricsRequest{ID: "inst_nope", MetricsWindow: hour}, nil); !api.IsCode(err, api.CodeInvalidInput) {
		t.Errorf("bad id: %v", err)
	}
	var got api.Metrics
	if err := h.call("metrics", api.InstanceMetricsRequest{ID: inst.ID, MetricsWindow: hour}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Series) != 1 || got.Series[0].Name != "cpu" || len(got.Series[0].Points) != 60 || got.Step != 60 {
		t.Fatalf("metrics: %+v", got)
	}
	if n := h.cloud.Calls(provider.VerbMetrics); n != 1 {
		t.Fatalf("provider metrics calls: %d", n)
	}
}
