package bus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// groupStores starts an embedded server (sync always, as every server
// here) and opens the stores on it.
func groupStores(t *testing.T) (*nats.Conn, *Stores) {
	t.Helper()
	srv, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := OpenStores(ctx, nc, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return nc, st
}

// createAll creates keys in kv all at once (one goroutine each, started
// together) and returns each key's revision or error.
func createAll(kv jetstream.KeyValue, keys []string) ([]uint64, []error) {
	revs, errs := make([]uint64, len(keys)), make([]error, len(keys))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, key := range keys {
		wg.Go(func() {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			revs[i], errs[i] = kv.Create(ctx, key, []byte(`{"v":"`+key+`"}`))
		})
	}
	close(start)
	wg.Wait()
	return revs, errs
}

// holdLeader makes every create of g made next wait for a turn: the
// leader's turn is taken and so is every place of a create alone.
func holdLeader(g *groupCommit) {
	g.mu.Lock()
	g.leading, g.alone = true, groupAlone
	g.mu.Unlock()
}

// waitQueued waits until n creates wait in g.
func waitQueued(g *groupCommit, n int) {
	for {
		g.mu.Lock()
		queued := len(g.waiting)
		g.mu.Unlock()
		if queued >= n {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// releaseLeader ends holdLeader: a leader sends what waits, in one turn.
func releaseLeader(g *groupCommit) {
	g.mu.Lock()
	g.alone = 0
	g.mu.Unlock()
	go g.lead()
}

// Many creates at once on a single server's bucket are committed in
// atomic batches, and each create is answered with its own key's
// revision, as the stream stored it.
func TestGroupCommitAnswersEachCreateItsRevision(t *testing.T) {
	_, st := groupStores(t)
	b := st.Instances.(*bucket)
	if b.group == nil {
		t.Fatal("the instances bucket of a single server has no group commit (allow_atomic not set?)")
	}
	keys := make([]string, 400)
	for i := range keys {
		keys[i] = fmt.Sprintf("acme.in_%03d", i)
	}
	revs, errs := createAll(st.Instances, keys)
	seen := map[uint64]string{}
	for i, key := range keys {
		if errs[i] != nil {
			t.Fatalf("create %s: %v", key, errs[i])
		}
		e, err := st.Instances.Get(context.Background(), key)
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		if e.Revision() != revs[i] || string(e.Value()) != `{"v":"`+key+`"}` {
			t.Errorf("%s: answered revision %d, stored %d with %s", key, revs[i], e.Revision(), e.Value())
		}
		if other, dup := seen[revs[i]]; dup {
			t.Errorf("%s and %s both answered revision %d", key, other, revs[i])
		}
		seen[revs[i]] = key
	}
	if b.group.batches.Load() == 0 {
		t.Error("400 creates at once made no batch: each went alone")
	}
	t.Logf("400 creates in %d batches", b.group.batches.Load())
}

// A batch holding a key that exists, one that was deleted and the same
// new key twice is refused as a whole; the creates are then written one
// by one and each gets what a create alone gets: ErrKeyExists for the
// existing key and for one of the two twins, a revision for the rest
// (the deleted key's create writes over its delete marker).
func TestGroupCommitRefusedBatchAnswersEachCreateAlone(t *testing.T) {
	_, st := groupStores(t)
	ctx := context.Background()
	kv := st.Instances
	b := kv.(*bucket)
	if _, err := b.KeyValue.Create(ctx, "acme.exists", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.KeyValue.Create(ctx, "acme.deleted", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "acme.deleted"); err != nil {
		t.Fatal(err)
	}
	alone := &countingKV{KeyValue: b.group.kv}
	b.group.kv = alone
	holdLeader(b.group) // every create below waits for one turn
	keys := []string{"acme.exists", "acme.deleted", "acme.twin", "acme.twin"}
	for i := range 2 * groupMin {
		keys = append(keys, fmt.Sprintf("acme.new_%02d", i))
	}
	var revs []uint64
	var errs []error
	done := make(chan struct{})
	go func() { revs, errs = createAll(kv, keys); close(done) }()
	waitQueued(b.group, len(keys))
	releaseLeader(b.group)
	<-done

	twins := 0
	for i, key := range keys {
		switch {
		case key == "acme.exists":
			if !errors.Is(errs[i], jetstream.ErrKeyExists) {
				t.Errorf("create of an existing key: %v, want ErrKeyExists", errs[i])
			}
		case key == "acme.twin" && errors.Is(errs[i], jetstream.ErrKeyExists):
			twins++
		case errs[i] != nil:
			t.Errorf("create %s: %v", key, errs[i])
		default:
			e, err := kv.Get(ctx, key)
			if err != nil || e.Revision() != revs[i] {
				t.Errorf("%s: answered revision %d, stored %v (%v)", key, revs[i], e, err)
			}
		}
	}
	if twins != 1 {
		t.Errorf("%d of the two creates of one key refused, want 1", twins)
	}
	if n := b.group.batches.Load(); n != 0 {
		t.Errorf("%d batches committed, want 0 (the batch was refused)", n)
	}
	if n, most := alone.calls.Load(), alone.most.Load(); n != int64(len(keys)) || most > groupAlone {
		t.Errorf("the refused batch's %d creates were written in %d creates alone, at most %d at once (want %d, at most %d)",
			len(keys), n, most, len(keys), groupAlone)
	}
}

// countingKV is a bucket handle that counts its creates, and the most
// under way at once; each takes 2 ms more, so that creates sent together
// overlap.
type countingKV struct {
	jetstream.KeyValue
	calls, running, most atomic.Int64
}

func (c *countingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	c.calls.Add(1)
	now := c.running.Add(1)
	defer c.running.Add(-1)
	for {
		if m := c.most.Load(); now <= m || c.most.CompareAndSwap(m, now) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	return c.KeyValue.Create(ctx, key, value, opts...)
}

// A stream whose atomic batches were turned off after the bucket was
// opened (by an older version of this package updating it during a
// rolling upgrade) refuses every batch: each create is then written alone
// and succeeds.
func TestGroupCommitFallsBackWhenTheStreamRefusesBatches(t *testing.T) {
	nc, st := groupStores(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stream, err := js.Stream(ctx, "KV_"+BucketInstances)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.AllowAtomicPublish = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	b := st.Instances.(*bucket)
	keys := make([]string, 4*groupMin)
	for i := range keys {
		keys[i] = fmt.Sprintf("acme.k%02d", i)
	}
	revs, errs := createAll(b, keys)
	for i, err := range errs {
		if err != nil {
			t.Errorf("create %s: %v", keys[i], err)
		} else if e, err := b.Get(ctx, keys[i]); err != nil || e.Revision() != revs[i] {
			t.Errorf("%s: answered revision %d, stored %v (%v)", keys[i], revs[i], e, err)
		}
	}
	if n := b.group.batches.Load(); n != 0 {
		t.Errorf("%d batches committed on a stream without allow_atomic", n)
	}
}

// BenchmarkGroupCommit measures a bucket's creates, COMPUTE_BENCH_CLIENTS
// at once (default 64), with the group commit and with each create alone
// (the bucket's plain KeyValue), in alternating rounds of 2,000 (5 rounds),
// and prints both rates, their ratio and the batches made. Run it once: go
// test -run '^$' -bench GroupCommit -benchtime 1x ./pkg/bus/
func BenchmarkGroupCommit(b *testing.B) {
	clients := benchEnv("COMPUTE_BENCH_CLIENTS", 64)
	const rounds, per = 5, 2000
	for b.Loop() {
		srv, err := StartEmbedded(EmbeddedOptions{StoreDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		st, err := OpenStores(context.Background(), nc, StoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		grouped := st.Instances.(*bucket)
		var groupTime, aloneTime time.Duration
		for round := range rounds {
			for way, kv := range []jetstream.KeyValue{grouped, grouped.KeyValue} {
				start := time.Now()
				next := make(chan int)
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						for i := range next {
							if _, err := kv.Create(context.Background(), fmt.Sprintf("acme.r%d-%d-%d", round, way, i), []byte(`{"id":"x"}`)); err != nil {
								b.Error(err)
							}
						}
					})
				}
				for i := range per {
					next <- i
				}
				close(next)
				wg.Wait()
				if way == 0 {
					groupTime += time.Since(start)
				} else {
					aloneTime += time.Since(start)
				}
			}
		}
		n := float64(rounds * per)
		b.ReportMetric(n/groupTime.Seconds(), "grouped-creates/s")
		b.ReportMetric(n/aloneTime.Seconds(), "alone-creates/s")
		b.ReportMetric(aloneTime.Seconds()/groupTime.Seconds(), "x-alone")
		b.Logf("%d creates, %d at once: grouped %.0f/s in %d batches, alone %.0f/s: %.2f× faster", rounds*per, clients,
			n/groupTime.Seconds(), grouped.group.batches.Load(), n/aloneTime.Seconds(), aloneTime.Seconds()/groupTime.Seconds())
		nc.Close()
		srv.Shutdown()
	}
}

// benchEnv is the integer environment variable name, or def.
func benchEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
