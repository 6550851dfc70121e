package hetzner

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"better-compute.io/compute/pkg/metrics"
)

// Routes are paths below the endpoint's, ids templated; the query is
// not part of them.
func TestRouteIsBelowTheEndpoint(t *testing.T) {
	cases := []struct{ endpoint, url, want string }{
		{DefaultEndpoint, "https://api.hetzner.cloud/v1/servers?label_selector=a%3Db", "/servers"},
		{DefaultEndpoint, "https://api.hetzner.cloud/v1/servers/42/actions/poweron", "/servers/{id}/actions/poweron"},
		{"http://127.0.0.1:4680/v1/", "http://127.0.0.1:4680/v1/actions?id=7", "/actions"},
		{"http://127.0.0.1:4680", "http://127.0.0.1:4680/server_types", "/server_types"},
	}
	for _, tc := range cases {
		s := newSettings([]Option{WithEndpoint(tc.endpoint)})
		if got := s.route(httptest.NewRequest(http.MethodGet, tc.url, nil)); got != tc.want {
			t.Errorf("endpoint %s, %s: route %q, want %q", tc.endpoint, tc.url, got, tc.want)
		}
	}
}

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
