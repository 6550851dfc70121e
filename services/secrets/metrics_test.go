package secrets

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/metrics"
)

// Resolves are counted by outcome: OK, or the refusal's code.
func TestResolvesCountedByOutcome(t *testing.T) {
	h := startHarness(t)
	s := h.put(t, "acme", api.SecretPutRequest{Name: "tok", Value: "metrics-value-4e2a"})
	count := func(outcome string) float64 {
		return testutil.ToFloat64(metrics.SecretResolves.WithLabelValues("resolve", outcome))
	}
	ok, denied, missing := count(metrics.CodeOK), count(string(api.CodeAccessDenied)), count(string(api.CodeNotFound))
	if _, err := h.resolve(t, "acme", s.Ref); err != nil {
		t.Fatal(err)
	}
	if _, err := h.resolve(t, "other", s.Ref); !api.IsCode(err, api.CodeAccessDenied) {
		t.Fatalf("cross-tenant resolve: %v", err)
	}
	if _, err := h.resolve(t, "acme", "secret://acme/"+api.NewID(api.PrefixSecret)); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("missing resolve: %v", err)
	}
	for name, got := range map[string]float64{"OK": count(metrics.CodeOK) - ok,
		"ACCESS_DENIED": count(string(api.CodeAccessDenied)) - denied, "NOT_FOUND": count(string(api.CodeNotFound)) - missing} {
		if got != 1 {
			t.Errorf("resolves %s: %v, want 1", name, got)
		}
	}
}
