package hetzner

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"better-compute.io/compute/pkg/metrics"
)

// A create and a get are counted in the provider request metrics by
// method, route template and status.
func TestCallsCountRequestsByRoute(t *testing.T) {
	e := newEnv(t)
	create := metrics.ProviderRequests.WithLabelValues(ProviderID, http.MethodPost, "/servers", "201")
	get := metrics.ProviderRequests.WithLabelValues(ProviderID, http.MethodGet, "/servers/{id}", "200")
	beforeCreate, beforeGet := testutil.ToFloat64(create), testutil.ToFloat64(get)
	m := e.create(t, "metrics-1", "metrics-1")
	e.mustGet(t, m.ID)
	if got := testutil.ToFloat64(create) - beforeCreate; got != 1 {
		t.Errorf("POST /servers 201 counted %v times, want 1", got)
	}
	if got := testutil.ToFloat64(get) - beforeGet; got < 1 {
		t.Errorf("GET /servers/{id} 200 counted %v times, want at least 1", got)
	}
}
