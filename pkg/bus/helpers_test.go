package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/bus"
)

// startService serves eps on nc with workers workers until the test ends.
func startService(t *testing.T, nc *nats.Conn, workers int, eps ...bus.Endpoint) *bus.Service {
	t.Helper()
	svc, err := bus.StartService(nc, bus.ServiceConfig{Name: "test", Version: "1.0.0", Endpoints: eps,
		Workers: workers, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("start service: %v", err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return svc
}

// testCtx is a context with a generous deadline, cancelled at cleanup.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
