package metrics_test

import (
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/metrics"
)

// Serve answers a scrape that the Prometheus text parser reads, holding
// every compute_ family that has a sample and the Go runtime's.
func TestServeAnswersAParsableScrape(t *testing.T) {
	metrics.BusRequests.WithLabelValues("serve-test", "things-get", metrics.CodeOK).Inc()
	srv, err := metrics.Serve("127.0.0.1:0", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	resp, err := http.Get(srv.URL()) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"compute_bus_requests_total", "go_goroutines", "process_start_time_seconds"} {
		if families[name] == nil {
			t.Errorf("scrape has no %s", name)
		}
	}
}
