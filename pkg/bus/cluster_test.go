package bus_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// cluster is three JetStream servers in one cluster on loopback.
type cluster struct {
	opts []*server.Options
	srvs []*server.Server
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{}
	routes := make([]string, 3)
	ports := make([]int, 3)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i])
		_ = ln.Close()
	}
	for i := range ports {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		})
		c.srvs = append(c.srvs, nil)
		c.start(t, i)
	}
	t.Cleanup(func() {
		for _, srv := range c.srvs {
			srv.Shutdown()
		}
	})
	return c
}

// start (re)starts server i with its options (and its store).
func (c *cluster) start(t *testing.T, i int) {
	t.Helper()
	srv, err := server.NewServer(c.opts[i])
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatalf("server %d not ready", i+1)
	}
	c.srvs[i] = srv
}

func (c *cluster) url(i int) string { return c.srvs[i].ClientURL() }

// openReplicated opens the stores with three replicas through url.
func openReplicated(t *testing.T, url string) *bus.Stores {
	t.Helper()
	st, err := tryOpenReplicated(t, url)
	if err != nil {
		t.Fatalf("open replicated stores: %v", err)
	}
	return st
}

// tryOpenReplicated is one OpenStores call with three replicas through url,
// which waits out the cluster's leader elections itself.
func tryOpenReplicated(t *testing.T, url string) (*bus.Stores, error) {
	nc, err := bus.Connect(bus.ConnectOptions{URL: url, Name: t.Name()})
	if err != nil {
		return nil, err
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return bus.OpenStores(ctx, nc, bus.StoreOptions{Replicas: 3})
}

// Services starting together on a new cluster all create the replicated
// buckets and streams at once; every one of them opens the stores.
func TestConcurrentFirstOpenOnACluster(t *testing.T) {
	c := startCluster(t)
	const openers = 6
	var wg sync.WaitGroup
	for i := range openers {
		wg.Go(func() {
			if _, err := tryOpenReplicated(t, c.url(i%3)); err != nil {
				t.Errorf("opener %d (node %d): %v", i, i%3+1, err)
			}
		})
	}
	wg.Wait()
}

// updateAsServicesDo is a compare-and-set write retried, as the services
// do, after a CONFLICT whose re-read shows that nothing else wrote: under
// load nats-server sometimes refuses a write on a replicated stream with
// "wrong last sequence" although the expected revision is the latest.
func updateAsServicesDo(ctx context.Context, kv jetstream.KeyValue, key string, v rec, rev uint64) (uint64, error) {
	for attempt := 0; ; attempt++ {
		newRev, err := bus.UpdateJSON(ctx, kv, key, v, rev)
		if !api.IsCode(err, api.CodeConflict) || attempt == 3 {
			return newRev, err
		}
		var cur rec
		curRev, gerr := bus.GetJSON(ctx, kv, key, &cur)
		if gerr != nil || curRev != rev {
			return newRev, err // a real conflict
		}
	}
}

// On a replicated bucket a read through any server sees every write
// acknowledged before it (reads go to the stream leader), and concurrent
// compare-and-set writes lose with CONFLICT, never UNAVAILABLE.
func TestReplicatedStores(t *testing.T) {
	c := startCluster(t)
	writer := openReplicated(t, c.url(0))
	reader := openReplicated(t, c.url(1))
	ctx := testCtx(t)

	for _, kv := range []string{bus.BucketSecrets, bus.BucketAccounts, bus.BucketPools, bus.BucketInstances, bus.BucketIdempotency} {
		s, err := writer.JS.Stream(ctx, "KV_"+kv)
		if err != nil {
			t.Fatal(err)
		}
		if cfg := s.CachedInfo().Config; cfg.Replicas != 3 || cfg.AllowDirect {
			t.Errorf("bucket %s: replicas %d, direct gets %v", kv, cfg.Replicas, cfg.AllowDirect)
		}
	}

	for i := range 100 {
		key := fmt.Sprintf("acme.inst_%03d", i)
		rev, err := bus.CreateJSON(ctx, writer.Instances, key, rec{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		var got rec
		if gotRev, err := bus.GetJSON(ctx, reader.Instances, key, &got); err != nil || gotRev != rev {
			t.Fatalf("read %s right after its create (revision %d): revision %d, %v", key, rev, gotRev, err)
		}
		if rev, err = updateAsServicesDo(ctx, writer.Instances, key, rec{N: 2}, rev); err != nil {
			t.Fatal(err)
		}
		if gotRev, err := bus.GetJSON(ctx, reader.Instances, key, &got); err != nil || gotRev != rev || got.N != 2 {
			t.Fatalf("read %s right after its update (revision %d): revision %d %+v, %v", key, rev, gotRev, got, err)
		}
	}

	const writers = 16
	rev, err := bus.CreateJSON(ctx, writer.Pools, "acme.pool_1", rec{N: 0})
	if err != nil {
		t.Fatal(err)
	}
	conns := []*bus.Stores{writer, reader}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := bus.UpdateJSON(ctx, conns[w%2].Pools, "acme.pool_1", rec{N: w}, rev)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !api.IsCode(err, api.CodeConflict):
			t.Errorf("a losing compare-and-set answered %v, want CONFLICT", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d writes at one revision won, want 1", won, writers)
	}
}

// Keys lists every key while a replica is down, and after it restarted
// (retrying a listing that read the replica before it caught up).
func TestReplicatedKeysAcrossNodeRestart(t *testing.T) {
	c := startCluster(t)
	st := openReplicated(t, c.url(0))
	ctx := testCtx(t)
	write := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := bus.CreateJSON(ctx, st.Instances, fmt.Sprintf("acme.inst_%03d", i), rec{N: i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantKeys := func(when string, n int) {
		t.Helper()
		keys, err := bus.Keys(ctx, st.Instances, "acme.")
		if err != nil || len(keys) != n {
			t.Fatalf("%s: %d keys, %v; want %d", when, len(keys), err, n)
		}
	}
	write(0, 50)
	c.srvs[2].Shutdown()
	c.srvs[2].WaitForShutdown()
	write(50, 100)
	wantKeys("with n3 down", 100)
	c.start(t, 2)
	for range 20 {
		wantKeys("after n3 restarted", 100)
	}
}
