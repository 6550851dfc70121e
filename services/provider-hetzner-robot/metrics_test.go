package robot

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/metrics"
)

// Webservice calls are counted in the provider request metrics by
// method, route template (the server number as {id}) and status.
func TestCallsCountRequestsByRoute(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctx30(t)
	reset := metrics.ProviderRequests.WithLabelValues(ProviderID, http.MethodPost, "/reset/{id}", "200")
	get := metrics.ProviderRequests.WithLabelValues(ProviderID, http.MethodGet, "/server/{id}", "200")
	beforeReset, beforeGet := testutil.ToFloat64(reset), testutil.ToFloat64(get)
	if _, err := e.remote.Create(ctx, e.acct, "inst_a", api.MachineSpec{Name: "bm-a", OfferID: "101", Image: "u"}); err != nil {
		t.Fatal(err)
	}
	if err := e.remote.Power(ctx, e.acct, "101", api.ActionReset); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(reset) - beforeReset; got != 1 {
		t.Errorf("POST /reset/{id} 200 counted %v times, want 1", got)
	}
	if got := testutil.ToFloat64(get) - beforeGet; got < 1 {
		t.Errorf("GET /server/{id} 200 counted %v times, want at least 1", got)
	}
}
