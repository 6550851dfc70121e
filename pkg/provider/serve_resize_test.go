package provider_test

import (
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
)

// Serve checks resize and metrics requests before a client sees them
// (INVALID_INPUT naming the field) and answers UNSUPPORTED for a provider
// that does not claim the capability.
func TestServeResizeAndMetricsRequests(t *testing.T) {
	env := bustest.Start(t)
	bare, _ := tinyProvider(t, "bare", nil, bareTiny)
	serve(t, env.Connect(t), bare)
	ctx, acct := testCtx(t), account("pacct_1", 1)
	r := provider.Remote{NC: env.NC, ID: "bare"}
	now := time.Now().UTC()
	hour := api.MetricsWindow{Type: api.MetricsCPU, From: now.Add(-time.Hour), To: now}

	for _, c := range []struct {
		name string
		req  api.ProviderResizeRequest
		path string
	}{
		{"no id", api.ProviderResizeRequest{Account: acct, OfferID: "cx33"}, "id"},
		{"no offer", api.ProviderResizeRequest{Account: acct, ID: "1"}, "offerId"},
		{"bad power", api.ProviderResizeRequest{Account: acct, ID: "1", OfferID: "cx33", Power: "sideways"}, "power"},
	} {
		_, err := r.Resize(ctx, c.req)
		if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidInput || ce.Path() != c.path {
			t.Errorf("resize with %s: %v (path %q), want INVALID_INPUT naming %s", c.name, err, ce.Path(), c.path)
		}
	}
	bad := hour
	bad.Type = "memory"
	if _, err := r.Metrics(ctx, acct, "1", bad); api.AsComputeError(err).Path() != "type" {
		t.Errorf("metrics of an unknown type: %v", err)
	}
	_, err := r.Resize(ctx, api.ProviderResizeRequest{Account: acct, ID: "1", OfferID: "cx33"})
	wantError(t, err, api.CodeUnsupported, "provider bare does not support resize", api.ErrorDetails{})
	_, err = r.Metrics(ctx, acct, "1", hour)
	wantError(t, err, api.CodeUnsupported, "provider bare does not support metrics", api.ErrorDetails{})
}
