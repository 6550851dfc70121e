package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// BenchmarkSecretsIsolation measures what one tenant's list flood costs
// another tenant's secrets.list, as BenchmarkTenantIsolation
// (services/reconciler) does for instances: globex's secrets.list latency
// (a page of its 10 secrets, one list at a time, COMPUTE_BENCH_SAMPLES per
// phase, default 1,000, 8 s at most) alone, then while acme runs 80
// secrets.list at once of its COMPUTE_BENCH_SECRETS secrets (default
// 10,000) in a loop (its pages not decoded), once without quotas, once
// with concurrentLists 4 and once with listsPerSecond 20 added, in
// COMPUTE_BENCH_ROUNDS rounds (default 5). The service runs with its
// default workers and the quotas from the tenants bucket, as Start serves
// it. Run it once: go test -run '^$' -bench SecretsIsolation -benchtime 1x
// ./services/secrets/
func BenchmarkSecretsIsolation(b *testing.B) {
	n := bustest.EnvInt("COMPUTE_BENCH_SECRETS", 10_000)
	for b.Loop() {
		h := startHarness(b, func(o *Options) { o.Workers, o.Logger = 0, zerolog.Nop() })
		quotas, err := h.env.Stores.Quotas(zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		call := func(tenant, verb string, in, out any) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return bus.Call(ctx, h.env.NC, cmd(tenant, verb), in, out)
		}
		seed := func(tenant string, count int) {
			var wg sync.WaitGroup
			next := make(chan int)
			for range 64 {
				wg.Go(func() {
					for i := range next {
						if err := call(tenant, "put", api.SecretPutRequest{Name: fmt.Sprintf("s%06d", i), Value: "bench-value"}, nil); err != nil {
							b.Errorf("put: %v", err)
						}
					}
				})
			}
			for i := range count {
				next <- i
			}
			close(next)
			wg.Wait()
		}
		seed("acme", n)
		seed("globex", 10)
		floodConn := h.env.Connect(b)
		is := &bustest.Isolation{Victim: "globex", Flooder: "acme", Budget: 8 * time.Second,
			Rounds: bustest.EnvInt("COMPUTE_BENCH_ROUNDS", 5), Samples: bustest.EnvInt("COMPUTE_BENCH_SAMPLES", 1000),
			QuotaSets: []api.TenantQuotas{{}, {ConcurrentLists: 4}, {ConcurrentLists: 4, ListsPerSecond: 20}},
			SetQuotas: func(q api.TenantQuotas) { bustest.SetQuotas(b, h.env.Stores, quotas, "acme", q) },
			Probes: []bustest.Probe{{Name: "secrets.list", Call: func() error {
				var page api.List[api.Secret]
				if err := call("globex", "list", api.ListRequest{}, &page); err != nil {
					return err
				}
				if len(page.Items) != 10 {
					return fmt.Errorf("a page of %d secrets, want 10", len(page.Items))
				}
				return nil
			}}}}
		// the pages are not decoded: acme's client runs elsewhere, not in
		// the replica measured
		is.Floods = []bustest.Flood{{Name: "80 lists", Run: is.Loop(80, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return bus.Call(ctx, floodConn, cmd("acme", "list"), api.ListRequest{}, &json.RawMessage{})
		})}}
		b.Logf("acme holds %d secrets, globex 10", n)
		is.Run(b)
	}
}
