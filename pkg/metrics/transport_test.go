package metrics_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/metrics"
)

func TestRouteTemplatesEveryID(t *testing.T) {
	pve := map[string]string{"nodes": "{node}", "qemu": "{vmid}", "tasks": "{upid}", "storage": "{storage}"}
	cases := []struct {
		path, base string
		params     map[string]string
		want       string
	}{
		{"/v1/servers", "/v1", nil, "/servers"},
		{"/v1/servers/42", "/v1", nil, "/servers/{id}"},
		{"/v1/servers/42/actions/poweron", "/v1", nil, "/servers/{id}/actions/poweron"},
		{"/servers/42/actions/change_type", "", nil, "/servers/{id}/actions/change_type"},
		{"/v1/ssh_keys/My-Key", "/v1", nil, "/ssh_keys/{id}"},
		{"/nodes/pve1/qemu/100/status/current", "", pve, "/nodes/{node}/qemu/{vmid}/status/current"},
		{"/nodes/pve/tasks/UPID:pve:0000:task:/status", "", pve, "/nodes/{node}/tasks/{upid}/status"},
		{"/nodes/pve/storage/local/status", "", pve, "/nodes/{node}/storage/{storage}/status"},
		{"/nodes/pve/qemu", "", pve, "/nodes/{node}/qemu"},
		{"/cluster/resources", "", pve, "/cluster/resources"},
	}
	for _, tc := range cases {
		if got := metrics.Route(tc.path, tc.base, tc.params); got != tc.want {
			t.Errorf("Route(%q, %q) = %q, want %q", tc.path, tc.base, got, tc.want)
		}
	}
}

// EndpointRoute's routes are paths below the endpoint's, ids templated;
// the query is not part of them.
func TestEndpointRoute(t *testing.T) {
	cases := []struct{ endpoint, url, want string }{
		{"https://api.hetzner.cloud/v1", "https://api.hetzner.cloud/v1/servers?label_selector=a%3Db", "/servers"},
		{"https://api.hetzner.cloud/v1", "https://api.hetzner.cloud/v1/servers/42/actions/poweron", "/servers/{id}/actions/poweron"},
		{"http://127.0.0.1:4680/v1/", "http://127.0.0.1:4680/v1/actions?id=7", "/actions"},
		{"http://127.0.0.1:4680", "http://127.0.0.1:4680/server_types", "/server_types"},
		{"https://robot-ws.your-server.de", "https://robot-ws.your-server.de/boot/321/rescue", "/boot/{id}/rescue"},
		{"https://robot-ws.your-server.de", "https://robot-ws.your-server.de/key/ab:cd:ef", "/key/{id}"},
		{"https://robot-ws.your-server.de", "https://robot-ws.your-server.de/ip/192.0.2.7", "/ip/{id}"},
	}
	for _, tc := range cases {
		if got := metrics.EndpointRoute(tc.endpoint)(httptest.NewRequest(http.MethodGet, tc.url, nil)); got != tc.want {
			t.Errorf("endpoint %s, %s: route %q, want %q", tc.endpoint, tc.url, got, tc.want)
		}
	}
}

// Every request through ProviderTransport is counted by route and
// status; a 429 also counts as rate limited, and a request without a
// reply as status "error".
func TestProviderTransportCountsByRouteAndStatus(t *testing.T) {
	const provider = "transport-test"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/servers/7" {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	route := func(r *http.Request) string { return metrics.Route(r.URL.Path, "", nil) }
	c := &http.Client{Transport: metrics.ProviderTransport(provider, route, nil)}
	for _, path := range []string{"/servers", "/servers/7", "/servers/8"} {
		resp, err := c.Post(srv.URL+path, "application/json", nil) //nolint:noctx // test
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	down := &http.Client{Transport: metrics.ProviderTransport(provider, route, failing{})}
	if resp, err := down.Get("http://127.0.0.1:1/servers/9"); err == nil { //nolint:noctx // test
		_ = resp.Body.Close()
		t.Fatal("the failing transport answered")
	}

	for _, c := range []struct {
		route, status string
		want          float64
	}{{"/servers", "201", 1}, {"/servers/{id}", "429", 1}, {"/servers/{id}", "201", 1}, {"/servers/{id}", "error", 1}} {
		method := http.MethodPost
		if c.status == "error" {
			method = http.MethodGet
		}
		if got := testutil.ToFloat64(metrics.ProviderRequests.WithLabelValues(provider, method, c.route, c.status)); got != c.want {
			t.Errorf("%s %s %s: %v requests, want %v", method, c.route, c.status, got, c.want)
		}
	}
	if got := testutil.ToFloat64(metrics.ProviderRateLimited.WithLabelValues(provider)); got != 1 {
		t.Errorf("rate limited: %v, want 1", got)
	}
}

type failing struct{}

func (failing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connection refused")
}

// A code the catalogue lists is its own label; any other is UNKNOWN.
func TestCodeLabelKeepsTheCatalogue(t *testing.T) {
	for c, want := range map[api.Code]string{api.CodeInvalidInput: "INVALID_INPUT", api.CodeRateLimited: "RATE_LIMITED",
		"SOMETHING_NEW": metrics.CodeUnknown, "": metrics.CodeUnknown} {
		if got := metrics.CodeLabel(c); got != want {
			t.Errorf("CodeLabel(%q) = %q, want %q", c, got, want)
		}
	}
}
