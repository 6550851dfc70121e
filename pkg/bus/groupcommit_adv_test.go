package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// advBatch makes every create of keys (with values) wait for one turn of
// the leader, so that they go as one batch (when len(keys) >= groupMin),
// and returns each answer.
func advBatch(t *testing.T, b *bucket, keys []string, values [][]byte, timeout time.Duration) ([]uint64, []error) {
	t.Helper()
	g := b.group
	holdLeader(g)
	revs, errs := make([]uint64, len(keys)), make([]error, len(keys))
	var wg sync.WaitGroup
	queued := 0
	for i, key := range keys {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			revs[i], errs[i] = b.Create(ctx, key, values[i])
		})
		// keep the order of keys in the batch (a create that may not go in
		// one goes alone at once)
		if g.groupable(key, values[i]) {
			queued++
			waitQueued(g, queued)
		}
	}
	releaseLeader(g)
	wg.Wait()
	return revs, errs
}

func advKeys(prefix string, n int) ([]string, [][]byte) {
	keys, values := make([]string, n), make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s_%03d", prefix, i)
		values[i] = []byte(`{"v":"` + keys[i] + `"}`)
	}
	return keys, values
}

// checkStored fails for every create answered with a revision that is not
// the one stored with its value.
func checkStored(t *testing.T, kv jetstream.KeyValue, keys []string, values [][]byte, revs []uint64, errs []error) (ok int) {
	t.Helper()
	for i, key := range keys {
		if errs[i] != nil {
			continue
		}
		ok++
		e, err := kv.Get(context.Background(), key)
		if err != nil {
			t.Errorf("%s answered revision %d but Get: %v", key, revs[i], err)
			continue
		}
		if e.Revision() != revs[i] || string(e.Value()) != string(values[i]) {
			t.Errorf("%s answered revision %d, stored %d (%d bytes)", key, revs[i], e.Revision(), len(e.Value()))
		}
	}
	return ok
}

// Keys nats.go refuses ("a.", ".a", "a..b": its characters are allowed,
// its dots are not) among creates of one batch go alone and are refused as
// a create alone is (jetstream.ErrInvalidKey), nothing stored; the others
// are committed. In a batch such a key, last, sent its commit where no
// stream listens, and every create of the batch failed.
func TestGroupCommitInvalidKeysInBatch(t *testing.T) {
	_, st := groupStores(t)
	b := st.Instances.(*bucket)
	for _, bad := range []string{"acme.trailing.", ".acme.leading", "acme..double"} {
		for _, pos := range []string{"last", "first"} {
			t.Run(bad+"/"+pos, func(t *testing.T) {
				keys, values := advKeys("acme.ok"+pos+strings.ReplaceAll(bad, ".", "_"), groupMin)
				at := len(keys) - 1
				if pos == "first" {
					at = 0
				}
				keys[at] = bad
				revs, errs := advBatch(t, b, keys, values, 10*time.Second)
				for i, k := range keys {
					if i == at {
						if !errors.Is(errs[i], jetstream.ErrInvalidKey) {
							t.Errorf("create of invalid key %q: rev %d, err %v; want ErrInvalidKey (as b.KeyValue.Create)", k, revs[i], errs[i])
						}
					} else if errs[i] != nil {
						t.Errorf("create of valid key %q in the same batch: %v", k, errs[i])
					}
				}
				info, err := b.stream.Info(context.Background(), jetstream.WithSubjectFilter(">"))
				if err != nil {
					t.Fatal(err)
				}
				for s := range info.State.Subjects {
					if s == "$KV."+b.Bucket()+"."+bad {
						t.Errorf("invalid key %q stored (subject %q)", bad, s)
					}
				}
			})
		}
	}
}

// A value that fits max_payload in a create alone (whose only header is
// Nats-Expected-Last-Subject-Sequence) but not with a batch message's
// three more headers goes alone and is stored; the other creates are
// committed. As a batch's last message it failed every create of the
// batch.
func TestGroupCommitValueAtMaxPayload(t *testing.T) {
	nc, st := groupStores(t)
	b := st.Instances.(*bucket)
	mp := int(nc.MaxPayload())
	hdr := len("NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 0\r\n\r\n")
	big := make([]byte, mp-hdr-8)
	for i := range big {
		big[i] = 'x'
	}
	if _, err := b.KeyValue.Create(context.Background(), "acme.alone_big", big); err != nil {
		t.Fatalf("a create alone of %d bytes: %v", len(big), err)
	}
	for _, pos := range []string{"last", "middle"} {
		t.Run(pos, func(t *testing.T) {
			keys, values := advKeys("acme."+pos, groupMin)
			at := len(keys) - 1
			if pos == "middle" {
				at = groupMin / 2
			}
			values[at] = big
			start := time.Now()
			revs, errs := advBatch(t, b, keys, values, 20*time.Second)
			failed := 0
			for i, err := range errs {
				if err != nil {
					failed++
					t.Errorf("%s (%d bytes): %v", keys[i], len(values[i]), err)
				}
			}
			checkStored(t, b, keys, values, revs, errs)
			t.Logf("%s: %d of %d failed in %v", pos, failed, len(keys), time.Since(start))
		})
	}
}

// The connection closed while creates wait: every create returns (an
// error), and the leader ends.
func TestGroupCommitConnClosedWhileWaiting(t *testing.T) {
	nc, st := groupStores(t)
	b := st.Instances.(*bucket)
	before := runtime.NumGoroutine()
	g := b.group
	holdLeader(g)
	keys, values := advKeys("acme.closed", 3*groupMin)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() {
			_, errs[i] = b.Create(context.Background(), key, values[i])
		})
	}
	waitQueued(g, len(keys))
	nc.Close()
	releaseLeader(g)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("creates still waiting 15 s after the connection closed")
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("%s: no error on a closed connection", keys[i])
		}
	}
	leaderEnds(t, g, 5*time.Second)
	t.Logf("goroutines before %d after %d; first err %v", before, runtime.NumGoroutine(), errs[0])
}

// The server shut down while a batch is being sent or committed, and a new
// one started on the same store and port: every create returns before
// its ctx ends, every revision answered is the one stored, and the
// leader ends.
func TestGroupCommitServerRestartMidBatch(t *testing.T) {
	dir := t.TempDir()
	srv, err := StartEmbedded(EmbeddedOptions{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Addr().(*net.TCPAddr).Port
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	st, err := OpenStores(context.Background(), nc, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := st.Instances.(*bucket)
	for round, delay := range []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond} {
		keys, values := advKeys(fmt.Sprintf("acme.r%d", round), 128)
		for i := range values {
			values[i] = []byte(strings.Repeat("q", 100*1024))
		}
		var revs []uint64
		var errs []error
		done := make(chan struct{})
		go func() { revs, errs = advBatch(t, b, keys, values, 20*time.Second); close(done) }()
		time.Sleep(delay)
		srv.Shutdown()
		srv.WaitForShutdown()
		if srv, err = StartEmbedded(EmbeddedOptions{StoreDir: dir, Port: port}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: creates still waiting 30 s after the restart", round)
		}
		ok := checkStored(t, b, keys, values, revs, errs)
		failed, failedStored := 0, 0
		var first error
		for i, err := range errs {
			if err != nil {
				failed++
				if first == nil {
					first = err
				}
				if _, gerr := b.Get(context.Background(), keys[i]); gerr == nil {
					failedStored++
				}
			}
		}
		t.Logf("round %d (shutdown after %v): %d ok, %d failed (%d of them stored; first %v)", round, delay, ok, failed, failedStored, first)
	}
	srv.Shutdown()
}

// The Idempotency bucket (a stream with max_age) commits batches too, and
// answers each create its revision; a key that exists in it makes the
// batch go alone, each create answered as alone.
func TestGroupCommitIdempotencyBucket(t *testing.T) {
	_, st := groupStores(t)
	b := st.Idempotency.(*bucket)
	if b.group == nil {
		t.Skip("no group commit on the idempotency bucket")
	}
	keys, values := advKeys("acme.idem", 2*groupMin)
	revs, errs := advBatch(t, b, keys, values, 10*time.Second)
	if n := checkStored(t, b, keys, values, revs, errs); n != len(keys) {
		t.Errorf("%d of %d stored: %v", n, len(keys), errs)
	}
	if b.group.batches.Load() != 1 {
		t.Errorf("batches %d, want 1", b.group.batches.Load())
	}
	keys2, values2 := advKeys("acme.idem2", 2*groupMin)
	keys2[5] = keys[5] // exists
	revs, errs = advBatch(t, b, keys2, values2, 10*time.Second)
	for i := range keys2 {
		if i == 5 {
			if !errors.Is(errs[i], jetstream.ErrKeyExists) {
				t.Errorf("existing key: %v", errs[i])
			}
			errs[i] = errors.New("skip")
		} else if errs[i] != nil {
			t.Errorf("%s: %v", keys2[i], errs[i])
		}
	}
	checkStored(t, b, keys2, values2, revs, errs)
}

// Callers whose ctx ends while they wait return at once with ctx's error,
// and the leader still ends when the queue is empty.
func TestGroupCommitCallersLeave(t *testing.T) {
	_, st := groupStores(t)
	b := st.Instances.(*bucket)
	g := b.group
	holdLeader(g)
	keys, values := advKeys("acme.leave", 3*groupMin)
	errs := make([]error, len(keys))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() {
			c := ctx
			if i%2 == 0 {
				c = context.Background()
			}
			_, errs[i] = b.Create(c, key, values[i])
		})
	}
	waitQueued(g, len(keys))
	cancel()
	start := time.Now()
	releaseLeader(g)
	wg.Wait()
	t.Logf("all returned in %v", time.Since(start))
	for i, err := range errs {
		_, gerr := b.Get(context.Background(), keys[i])
		switch {
		case i%2 == 0 && err != nil:
			t.Errorf("%s: %v", keys[i], err)
		case i%2 == 1 && err == nil:
			t.Errorf("%s: cancelled caller answered success", keys[i])
		case i%2 == 1 && gerr == nil:
			t.Logf("%s: cancelled caller's record stored anyway", keys[i])
		}
	}
	leaderEnds(t, g, 100*time.Millisecond)
}

// leaderEnds fails t unless g's leader has ended, with no create waiting,
// within the given time.
func leaderEnds(t *testing.T, g *groupCommit, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		g.mu.Lock()
		leading, waiting := g.leading, len(g.waiting)
		g.mu.Unlock()
		if !leading && waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%v after: leader still running %v, %d creates waiting", within, leading, waiting)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
