package proxmox

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"better-compute.io/compute/pkg/metrics"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// Every API route, requested with concrete parameters below a cluster's
// /api2/json, is labelled with the emulator's own pattern of it.
func TestRouteIsThePVEPattern(t *testing.T) {
	concrete := strings.NewReplacer("{node}", "pve-2", "{vmid}", "100", "{storage}", "local-lvm",
		"{upid}", "UPID:pve-2:0000A1B2:00C3D4E5:6789ABCD:qmclone:100:root@pam!emulator:")
	for _, r := range []string{emulator.RouteVersion, emulator.RouteClusterResources, emulator.RouteNextID, emulator.RouteNodes,
		emulator.RouteNodeStatus, emulator.RouteStorageList, emulator.RouteStorageStatus, emulator.RouteQemuList, emulator.RouteClone,
		emulator.RouteConfigGet, emulator.RouteResize, emulator.RouteStatusCurrent, emulator.RouteStart, emulator.RouteDestroy,
		emulator.RouteTaskStatus, emulator.RouteAgentInterfaces} {
		method, pattern, _ := strings.Cut(r, " ")
		req := httptest.NewRequest(method, "https://pve.example.net:8006"+apiPath+concrete.Replace(pattern), nil)
		if got := route(req); got != pattern {
			t.Errorf("%s %s: route %q, want %q", method, req.URL.Path, got, pattern)
		}
	}
}

// A create is counted in the provider request metrics by route template.
func TestCreateCountsRequestsByRoute(t *testing.T) {
	e := newEnv(t)
	clone := metrics.ProviderRequests.WithLabelValues(ProviderID, http.MethodPost, "/nodes/{node}/qemu/{vmid}/clone", "200")
	before := testutil.ToFloat64(clone)
	e.create(t, "metrics-1")
	if got := testutil.ToFloat64(clone) - before; got != 1 {
		t.Fatalf("clones counted: %v, want 1", got)
	}
}
