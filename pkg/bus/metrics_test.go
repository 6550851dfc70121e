package bus_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/metrics"
)

// Every request is counted under its service, endpoint name and reply
// code: a success OK, an error its ComputeError code, an expired request
// DROPPED; each is timed under the same labels.
func TestRequestMetricsByEndpointAndCode(t *testing.T) {
	env := bustest.Start(t)
	startService(t, env.Connect(t), 2, bus.Endpoint{Name: "things-get", Subject: "test.metrics.*",
		Handler: func(_ context.Context, req *bus.Request) (any, error) {
			if req.Subject == "test.metrics.missing" {
				return nil, api.Errorf(api.CodeNotFound, "no such thing")
			}
			return nil, nil
		}})
	count := func(code string) float64 {
		return testutil.ToFloat64(metrics.BusRequests.WithLabelValues("test", "things-get", code))
	}
	before := map[string]float64{metrics.CodeOK: count(metrics.CodeOK), "NOT_FOUND": count("NOT_FOUND"),
		metrics.CodeDropped: count(metrics.CodeDropped)}

	ctx := testCtx(t)
	for range 2 {
		if err := bus.Call(ctx, env.NC, "test.metrics.one", api.Empty{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := bus.Call(ctx, env.NC, "test.metrics.missing", api.Empty{}, nil); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("missing: %v", err)
	}
	expired := nats.NewMsg("test.metrics.late")
	expired.Header.Set(bus.DeadlineHeader, strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10))
	if _, err := env.NC.RequestMsg(expired, 300*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("expired request answered: %v", err)
	}
	// The dropped request is counted before the service reads the next
	// one; a request after it orders the check behind it.
	if err := bus.Call(ctx, env.NC, "test.metrics.one", api.Empty{}, nil); err != nil {
		t.Fatal(err)
	}

	for code, want := range map[string]float64{metrics.CodeOK: 3, "NOT_FOUND": 1, metrics.CodeDropped: 1} {
		if got := count(code) - before[code]; got != want {
			t.Errorf("code %s: %v requests counted, want %v", code, got, want)
		}
	}
	if n := testutil.CollectAndCount(metrics.BusRequestDuration, "compute_bus_request_duration_seconds"); n < 3 {
		t.Errorf("%d request duration series, want one per code (3) or more", n)
	}
}

// BenchmarkServiceRequest is a request's round trip through a service
// (the baseline); BenchmarkRequestMetrics is what recording its metrics
// costs. Their ratio is the share of a request the metrics take.
func BenchmarkServiceRequest(b *testing.B) {
	env := bustest.Start(b)
	svc, err := bus.StartService(env.Connect(b), bus.ServiceConfig{Name: "bench", Version: "1.0.0", Logger: zerolog.Nop(),
		Endpoints: []bus.Endpoint{{Name: "things-get", Subject: "bench.get",
			Handler: func(context.Context, *bus.Request) (any, error) { return nil, nil }}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Stop() })
	ctx := context.Background()
	for b.Loop() {
		if err := bus.Call(ctx, env.NC, "bench.get", api.Empty{}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRequestMetrics(b *testing.B) {
	for b.Loop() {
		metrics.BusRequests.WithLabelValues("bench", "things-get", metrics.CodeOK).Inc()
		metrics.BusRequestDuration.WithLabelValues("bench", "things-get", metrics.CodeOK).Observe(0.0002)
	}
}
