package authtest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// What crossing accounts costs a request: secrets.list of tenant acme sent
// by acme's own credential (through its service import, the reply mapped
// back) against the same request sent by the admin user inside the
// SERVICES account (no import), in one run on one server. It prints the
// figures; docs/benchmarks.md quotes the ratio.
func BenchmarkRequestThroughImport(b *testing.B) {
	s := startStack(b)
	acme := s.tenantClient(b, "acme")
	run := func(b *testing.B, nc *nats.Conn) {
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := bus.Call(ctx, nc, bus.Command("acme", bus.ResourceSecrets, "list"), api.ListRequest{}, nil); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, s.Admin) })
	b.Run("import", func(b *testing.B) { run(b, acme.nc) })
}
