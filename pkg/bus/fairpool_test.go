package bus_test

import (
	"context"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// TestOneTenantCannotHoldEveryWorker: with every worker of a service
// busy with one tenant's requests and more of them queued, another
// tenant's request is answered while they still run (a tenant holds at
// most the workers less an eighth), and once they are released the queued
// ones are answered too.
func TestOneTenantCannotHoldEveryWorker(t *testing.T) {
	env := bustest.Start(t)
	const workers = 8
	release := make(chan struct{})
	entered := make(chan string, 64)
	startService(t, env.NC, workers, bus.CommandEndpoint("things", "get", func(ctx context.Context, req *bus.Request) (any, error) {
		entered <- req.Tenant
		if req.Tenant == "acme" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return api.Empty{}, nil
	}))
	nc := env.Connect(t)
	call := func(tenant string) error {
		return bus.Call(testCtx(t), nc, bus.Command(tenant, "things", "get"), api.Empty{}, nil)
	}
	floodDone := make(chan error, 2*workers)
	for range 2 * workers {
		go func() { floodDone <- call("acme") }()
	}
	for range workers - workers/8 { // acme's share of the workers
		<-entered
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	globex := make(chan error, 1)
	go func() { globex <- bus.Call(ctx, nc, bus.Command("globex", "things", "get"), api.Empty{}, nil) }()
	select {
	case err := <-globex:
		if err != nil {
			t.Fatalf("globex's get beside acme's flood: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("globex's get not answered while acme's requests hold the workers")
	}
	close(release)
	for range 2 * workers {
		if err := <-floodDone; err != nil {
			t.Fatalf("acme's get: %v", err)
		}
	}
}
