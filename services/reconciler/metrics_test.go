package reconciler

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/metrics"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// gather collects r's Collector alone, on a pedantic registry (it checks
// every sample against the descriptions), and returns the values by
// metric name and label values joined with ",".
func gather(t *testing.T, r *Reconciler) map[string]map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		out[f.GetName()] = map[string]float64{}
		for _, m := range f.GetMetric() {
			out[f.GetName()][labelKey(m)] = m.GetGauge().GetValue()
		}
	}
	return out
}

func labelKey(m *dto.Metric) string {
	key := ""
	for i, l := range m.GetLabel() {
		if i > 0 {
			key += ","
		}
		key += l.GetValue()
	}
	return key
}

// Work nobody consumed yet is sampled as queue depth and age, the
// instances as Pending.
func TestCollectorSamplesQueueAndInstances(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	h.create(api.InstanceCreateRequest{Name: "a"})
	h.create(api.InstanceCreateRequest{Name: "b"})
	got := gather(t, h.rec)
	if v := got["compute_work_queue_messages"][""]; v != 2 {
		t.Errorf("queue depth %v, want 2: %v", v, got)
	}
	if v := got["compute_work_queue_unacknowledged_messages"][""]; v != 0 {
		t.Errorf("unacknowledged %v, want 0 (no replica consumes): %v", v, got)
	}
	if v := got["compute_work_queue_oldest_message_age_seconds"][""]; v <= 0 || v > 60 {
		t.Errorf("oldest message age %vs, want in (0, 60]: %v", v, got)
	}
	if v := got["compute_instances"][string(api.PhasePending)]; v != 2 {
		t.Errorf("Pending instances %v, want 2: %v", v, got)
	}
}

// A burst on a small Hetzner budget is counted as pacing waits, and the
// account's budget is sampled with the limit the API reports.
func TestPacedBurstIsCounted(t *testing.T) {
	const n = 20
	h := newHarness(t, fastOptions())
	emu, err := emulator.Start(emulator.Options{RateLimitSize: 10, RateLimitRefillPerSecond: 10, ActionDuration: 20 * time.Millisecond},
		"127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	h.pool = h.addHetznerPool(emu, nil)
	waits := metrics.PacingWaits.WithLabelValues("hetzner-cloud")
	before := testutil.ToFloat64(waits)
	h.waitPhases(h.createMany(n, "paced"), api.PhaseRunning, 2*time.Minute)
	if got := testutil.ToFloat64(waits) - before; got < 1 {
		t.Errorf("%d creates on a budget of 10 were paced %v times, want at least once", n, got)
	}
	budget := gather(t, h.rec)
	if v := budget["compute_provider_ratelimit_limit"][h.pool.ProviderAccountID]; v != 10 {
		t.Errorf("budget limit of %s: %v, want 10: %v", h.pool.ProviderAccountID, v, budget)
	}
	if v, ok := budget["compute_provider_ratelimit_remaining"][h.pool.ProviderAccountID]; !ok || v < 0 || v > 10 {
		t.Errorf("budget remaining of %s: %v (found %v), want in [0, 10]", h.pool.ProviderAccountID, v, ok)
	}
}

// Periodic resyncs are timed in compute_reconcile_resync_duration_seconds
// by result.
func TestResyncsAreTimed(t *testing.T) {
	ok := metrics.ResyncDuration.WithLabelValues("ok").(prometheus.Metric)
	count := func() uint64 {
		var m dto.Metric
		if err := ok.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	before := count()
	o := fastOptions()
	o.ResyncInterval = 100 * time.Millisecond
	h := newHarness(t, o)
	h.waitPhase(h.create(api.InstanceCreateRequest{Name: "a"}).ID, api.PhaseRunning)
	for deadline := time.Now().Add(time.Minute); count()-before < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d resyncs timed in a minute at a 100 ms interval, want 2", count()-before)
		}
	}
}
