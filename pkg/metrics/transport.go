package metrics

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ProviderTransport is base (http.DefaultTransport when nil) counting
// and timing every request in ProviderRequests, ProviderRequestDuration
// and ProviderRateLimited under provider. route turns a request into its
// route template (see Route); it must never return a raw id.
func ProviderTransport(provider string, route func(*http.Request) string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{provider: provider, route: route, base: base}
}

type transport struct {
	provider string
	route    func(*http.Request) string
	base     http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	route := t.route(req)
	ProviderRequestDuration.WithLabelValues(t.provider, req.Method, route).Observe(time.Since(start).Seconds())
	status := "error"
	if err == nil {
		status = strconv.Itoa(resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests {
			ProviderRateLimited.WithLabelValues(t.provider).Inc()
		}
	}
	ProviderRequests.WithLabelValues(t.provider, req.Method, route, status).Inc()
	return resp, err
}

// staticSegment is a path segment kept as it is in a route template:
// lower-case words such as "servers", "poweron" or
// "network-get-interfaces".
var staticSegment = regexp.MustCompile(`^[a-z][a-z_-]*$`)

// Route is the template of an API path below base (a prefix cut when
// present, such as "/v1" or "/api2/json"): a segment following a
// collection named in params becomes that placeholder ("nodes" →
// "{node}"), and any other segment that is not a lower-case word
// (staticSegment: ids, numbers, UPIDs, names) becomes "{id}". So
// "/v1/servers/42/actions/poweron" below "/v1" is
// "/servers/{id}/actions/poweron": a label value from a bounded set.
func Route(path, base string, params map[string]string) string {
	path = strings.TrimPrefix(path, base)
	segs := strings.Split(strings.Trim(path, "/"), "/")
	out := make([]string, len(segs))
	for i, s := range segs {
		switch p, ok := params[prev(segs, i)]; {
		case ok:
			out[i] = p
		case staticSegment.MatchString(s):
			out[i] = s
		default:
			out[i] = "{id}"
		}
	}
	return "/" + strings.Join(out, "/")
}

// EndpointRoute is a ProviderTransport route for an API at endpoint (an
// absolute URL): a request's path below the endpoint's own path (such as
// "/v1"), templated by Route without params ("/servers/{id}").
func EndpointRoute(endpoint string) func(*http.Request) string {
	base := ""
	if u, err := url.Parse(endpoint); err == nil {
		base = strings.TrimSuffix(u.Path, "/")
	}
	return func(req *http.Request) string { return Route(req.URL.Path, base, nil) }
}

// prev is the segment before segs[i] ("" for the first).
func prev(segs []string, i int) string {
	if i == 0 {
		return ""
	}
	return segs[i-1]
}
