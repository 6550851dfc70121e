package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// BenchmarkCreateAcceptance measures how fast instances.create accepts a
// burst: COMPUTE_BENCH_INSTANCES creates (default 10,000, each with its
// idempotency key, COMPUTE_BENCH_CLIENTS at once, default 64) answered by
// one reconciler whose work consumers also run (memory provider), next to a
// bare JetStream KV create loop of records of the same size, the same
// number at the same concurrency, in the same run, in COMPUTE_BENCH_ROUNDS
// alternating rounds (default 5), and next to a loop of the create's four
// writes alone (two KV creates in turn, then a publish waited for and one
// not into two async streams, as OpenStores makes the work and events
// streams on a single server), and next to as many creates without an
// idempotency key. It prints the rates, their ratios and each round's;
// COMPUTE_BENCH_API_ONLY=1 serves the instance API alone (no work
// consumed). Run it once: go test -run '^$' -bench CreateAcceptance
// -benchtime 1x ./services/reconciler/
func BenchmarkCreateAcceptance(b *testing.B) {
	n := bustest.EnvInt("COMPUTE_BENCH_INSTANCES", 10_000)
	clients := bustest.EnvInt("COMPUTE_BENCH_CLIENTS", 64)
	rounds := bustest.EnvInt("COMPUTE_BENCH_ROUNDS", 5)
	for b.Loop() {
		var what []start
		if os.Getenv("COMPUTE_BENCH_API_ONLY") != "" {
			what = append(what, startAPI)
		}
		h := newHarness(b, Options{Logger: fastOptions().Logger, ResyncInterval: -1}, what...)
		record, _ := json.Marshal(api.Instance{ID: api.NewID(api.PrefixInstance), TenantID: tenant, PoolID: h.pool.ID,
			Flavor: "small", Image: "debian-12", Name: "bench", Generation: 1, Version: 1})
		ctx := context.Background()
		bare, err := h.env.Stores.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "bench_bare", Storage: jetstream.FileStorage})
		if err != nil {
			b.Fatal(err)
		}
		// The create's writes alone, as OpenStores makes their stores: two
		// KV creates waited for one after the other in two buckets (the
		// claim, the instance), a JetStream publish waited for into an
		// async stream (the work message) and a publish not waited for
		// into another (the event).
		var two [2]jetstream.KeyValue
		for i := range two {
			if two[i], err = h.env.Stores.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket: fmt.Sprintf("bench_bare4_%d", i), Storage: jetstream.FileStorage}); err != nil {
				b.Fatal(err)
			}
		}
		for _, name := range []string{"bench_work", "bench_events"} {
			if _, err := h.env.Stores.JS.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"},
				Storage: jetstream.FileStorage, PersistMode: jetstream.AsyncPersistMode}); err != nil {
				b.Fatal(err)
			}
		}
		// Rounds alternate, so a change of the machine's load (other
		// processes) weighs on both loops alike.
		prefix := fmt.Sprintf("accept-%d", time.Now().UnixNano())
		per := n / rounds
		var bareTime, fourTime, createTime, keylessTime time.Duration
		ratios := make([]float64, 0, rounds)
		var writes uint64 // messages the creates stored
		for round := range rounds {
			start := time.Now()
			parallel(per, clients, func(i int) error {
				_, err := bare.Create(ctx, fmt.Sprintf("%s.r%d-k%d", tenant, round, i), record)
				return err
			})
			bareRound := time.Since(start)
			start = time.Now()
			parallel(per, clients, func(i int) error {
				key := fmt.Sprintf("%s.r%d-k%d", tenant, round, i)
				for _, kv := range two {
					if _, err := kv.Create(ctx, key, record); err != nil {
						return err
					}
				}
				if _, err := h.env.Stores.JS.Publish(ctx, "bench_work."+key, record); err != nil {
					return err
				}
				return h.env.NC.Publish("bench_events."+key, record)
			})
			fourTime += time.Since(start)
			w0 := storedMessages(b, h)
			start = time.Now()
			parallel(per, clients, func(i int) error {
				req := api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small", IdempotencyKey: fmt.Sprintf("%s-%d-%d", prefix, round, i)}
				return h.call("create", req, nil)
			})
			createRound := time.Since(start)
			writes += storedMessages(b, h) - w0
			start = time.Now()
			parallel(per, clients, func(int) error {
				return h.call("create", api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small"}, nil)
			})
			keylessTime += time.Since(start)
			bareTime, createTime = bareTime+bareRound, createTime+createRound
			ratios = append(ratios, createRound.Seconds()/bareRound.Seconds())
		}
		slices.Sort(ratios)
		total := per * rounds
		bareRate, createRate := float64(total)/bareTime.Seconds(), float64(total)/createTime.Seconds()
		b.ReportMetric(createRate, "creates/s")
		b.ReportMetric(bareRate, "bare-kv-creates/s")
		b.ReportMetric(bareRate/createRate, "x-bare")
		fourRate := float64(total) / fourTime.Seconds()
		b.ReportMetric(fourRate/createRate, "x-bare-four-writes")
		b.ReportMetric(ratios[len(ratios)/2], "x-bare-median-round")
		b.ReportMetric(float64(writes)/float64(total), "stored-msgs/create")
		keylessRate := float64(total) / keylessTime.Seconds()
		b.ReportMetric(keylessRate, "keyless-creates/s")
		b.Logf("%d creates (%d at once, %d rounds) accepted in %v: %.0f/s; bare KV creates %v: %.0f/s; bare/create %.2f (rounds: %.2f)",
			total, clients, rounds, createTime.Round(time.Millisecond), createRate, bareTime.Round(time.Millisecond), bareRate,
			bareRate/createRate, ratios)
		b.Logf("the create's four writes alone (2 KV creates and 1 async publish waited for, 1 async publish not): %v: %.0f/s; that over creates %.2f",
			fourTime.Round(time.Millisecond), fourRate, fourRate/createRate)
		b.Logf("per create: %.2f messages stored (instances and idempotency synced, work and events async; the bare loop: 1, synced); %d atomic batches of creates committed (group commit)",
			float64(writes)/float64(total), h.env.Stores.CreateBatches()+h.recBatches())
		b.Logf("creates without an idempotency key (one synced write, the instance): %v: %.0f/s; bare/keyless %.2f",
			keylessTime.Round(time.Millisecond), keylessRate, bareRate/keylessRate)
		if h.api == nil {
			h.rec.Stop()
		}
	}
}

// parallel runs fn(0..n-1), at most clients at once, failing the
// benchmark on the first error.
func parallel(n, clients int, fn func(i int) error) {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range clients {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		panic(fmt.Sprintf("parallel: %v", first))
	}
}

// recBatches is how many atomic batches of creates the harness's
// reconciler committed through its own stores (0 when only the API runs:
// it writes through h.env.Stores).
func (h *harness) recBatches() int64 {
	if h.rec == nil {
		return 0
	}
	return h.rec.st.CreateBatches()
}

// storedMessages is how many messages the streams a create writes hold
// (compute_instances, compute_idempotency, the work and events streams:
// the sum of their last sequences).
func storedMessages(b *testing.B, h *harness) uint64 {
	b.Helper()
	info, err := h.env.Server.Jsz(&natsserver.JSzOptions{Streams: true, Accounts: true})
	if err != nil {
		b.Fatal(err)
	}
	var n uint64
	for _, acc := range info.AccountDetails {
		for _, st := range acc.Streams {
			switch st.Name {
			case "KV_" + bus.BucketInstances, "KV_" + bus.BucketIdempotency, bus.StreamWork, bus.StreamEvents:
				n += st.State.LastSeq
			}
		}
	}
	return n
}
