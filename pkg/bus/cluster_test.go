package bus_test

import (
	"context"
	"errors"
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

// On a replicated bucket a read through any server sees every write
// acknowledged before it (reads go to the stream leader), and of
// concurrent compare-and-set writes at one revision one wins.
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
	for _, name := range []string{bus.StreamWork, bus.StreamEvents} {
		s, err := writer.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if cfg := s.CachedInfo().Config; cfg.Replicas != 3 || cfg.PersistMode != jetstream.DefaultPersistMode {
			t.Errorf("stream %s: replicas %d, persist mode %v (replicated streams cannot be async)", name, cfg.Replicas, cfg.PersistMode)
		}
	}
	if writer.WorkFlushedAsync() {
		t.Error("WorkFlushedAsync is true on a cluster")
	}

	wtab, rtab := bus.NewTable[rec](writer.Instances, "rec"), bus.NewTable[rec](reader.Instances, "rec")
	for i := range 100 {
		id := fmt.Sprintf("inst_%03d", i)
		rev, err := wtab.Create(ctx, "acme", id, rec{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, gotRev, err := rtab.Get(ctx, "acme", id); err != nil || gotRev != rev {
			t.Fatalf("read %s right after its create (revision %d): revision %d, %v", id, rev, gotRev, err)
		}
		if _, rev, err = wtab.MutateAt(ctx, "acme", id, rec{N: 1}, rev, func(r *rec) error { r.N = 2; return nil }); err != nil {
			t.Fatal(err)
		}
		if got, gotRev, err := rtab.Get(ctx, "acme", id); err != nil || gotRev != rev || got.N != 2 {
			t.Fatalf("read %s right after its update (revision %d): revision %d %+v, %v", id, rev, gotRev, got, err)
		}
	}

	const writers = 16
	rev, err := bus.NewTable[rec](writer.Pools, "rec").Create(ctx, "acme", "pool_1", rec{N: 0})
	if err != nil {
		t.Fatal(err)
	}
	conns := []*bus.Stores{writer, reader}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			errs <- casOnce(ctx, bus.NewTable[rec](conns[w%2].Pools, "rec"), "pool_1", rec{N: 0}, rev, w+1)
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, errLost):
			t.Errorf("a losing compare-and-set answered %v, want it lost", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d writes at one revision won, want 1", won, writers)
	}
}

// untilExplained runs write again while it is refused (refused) and the
// store does not show another writer that explains the refusal
// (explained), at most bus.CASAttempts times: under load nats-server
// sometimes refuses a write on a replicated stream although nothing else
// wrote. The services' loops do the same (Table.Mutate re-reads).
func untilExplained(write func() error, refused func(error) bool, explained func() bool) error {
	for attempt := 1; ; attempt++ {
		err := write()
		if !refused(err) || attempt == bus.CASAttempts || explained() {
			return err
		}
	}
}

// isCode reports errors of code.
func isCode(code api.Code) func(error) bool {
	return func(err error) bool { return api.IsCode(err, code) }
}

// errLost is what casOnce answers for a write that lost to another one.
var errLost = errors.New("lost the compare-and-set")

// casOnce writes rec{N: n} over cur at revision rev unless another writer
// got in first: MutateAt then reads the record again (after a write it
// classified as lost, CONFLICT) and the change, finding another N than
// cur's, answers errLost. A refusal although nothing else wrote (under load
// nats-server sometimes refuses a write on a replicated stream at the
// latest revision) finds cur's N and writes again. n must differ from
// cur.N and from every other writer's. Any other error is the write's own.
func casOnce(ctx context.Context, tab *bus.Table[rec], id string, cur rec, rev uint64, n int) error {
	_, _, err := tab.MutateAt(ctx, "acme", id, cur, rev, func(r *rec) error {
		if r.N != cur.N {
			return errLost
		}
		r.N = n
		return nil
	})
	return err
}

// Keys lists every key while a replica is down, and after it restarted
// (retrying a listing that read the replica before it caught up).
func TestReplicatedKeysAcrossNodeRestart(t *testing.T) {
	c := startCluster(t)
	st := openReplicated(t, c.url(0))
	ctx := testCtx(t)
	tab := bus.NewTable[rec](st.Instances, "rec")
	write := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := tab.Create(ctx, "acme", fmt.Sprintf("inst_%03d", i), rec{N: i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantKeys := func(when string, n int) {
		t.Helper()
		keys, err := tab.Keys(ctx, "acme")
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

// On a replicated bucket every losing write answers a ComputeError code,
// never UNAVAILABLE: creates racing on a key just deleted (nats.go returns
// 10164 unwrapped when a create re-tries at the delete marker's revision)
// lose with ALREADY_EXISTS, and updates and deletes at a stale revision
// lose with CONFLICT. Exactly one writer wins each round (a refusal that
// no other writer explains is tried again, see untilExplained).
func TestReplicatedConflictCodes(t *testing.T) {
	c := startCluster(t)
	conns := []*bus.Stores{openReplicated(t, c.url(0)), openReplicated(t, c.url(1)), openReplicated(t, c.url(2))}
	ctx := testCtx(t)
	const rounds, racers = 40, 6
	const id = "inst_race"
	tabs := []*bus.Table[rec]{}
	for _, st := range conns {
		tabs = append(tabs, bus.NewTable[rec](st.Instances, "rec"))
	}
	race := func(round int, what, want string, lost func(error) bool, write func(tab *bus.Table[rec], n int) error) {
		t.Helper()
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for w := range racers {
			wg.Go(func() { errs[w] = write(tabs[w%3], w) })
		}
		wg.Wait()
		won := 0
		for w, err := range errs {
			switch {
			case err == nil:
				won++
			case !lost(err):
				t.Errorf("round %d: %s %d of %d answered %v, want %s", round, what, w, racers, err, want)
			}
		}
		if won != 1 {
			t.Errorf("round %d: %d of %d %ss won, want 1", round, won, racers, what)
		}
	}
	rev, err := tabs[0].Create(ctx, "acme", id, rec{N: -1})
	if err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		race(round, "delete", "CONFLICT", isCode(api.CodeConflict), func(tab *bus.Table[rec], _ int) error {
			return untilExplained(func() error { return tab.Delete(ctx, "acme", id, rev) }, isCode(api.CodeConflict), func() bool {
				_, now, err := tab.Get(ctx, "acme", id)
				return api.IsCode(err, api.CodeNotFound) || err == nil && now != rev
			})
		})
		race(round, "create", "ALREADY_EXISTS", isCode(api.CodeAlreadyExists), func(tab *bus.Table[rec], n int) error {
			create := func() error { _, err := tab.Create(ctx, "acme", id, rec{N: n}); return err }
			return untilExplained(create, isCode(api.CodeAlreadyExists), func() bool {
				_, _, err := tab.Get(ctx, "acme", id)
				return err == nil
			})
		})
		cur, curRev, err := tabs[0].Get(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		// A loser whose every try is refused while the winner's write is
		// still being applied answers CONFLICT after bus.CASAttempts.
		race(round, "update", "CONFLICT or errLost", func(err error) bool { return errors.Is(err, errLost) || api.IsCode(err, api.CodeConflict) },
			func(tab *bus.Table[rec], n int) error { return casOnce(ctx, tab, id, cur, curRev, racers*(round+1)+n) })
		if _, rev, err = tabs[0].Get(ctx, "acme", id); err != nil {
			t.Fatal(err)
		}
	}
}

// A single server's async work stream on a store that is now a cluster's:
// asked for three replicas, OpenStores answers INVALID_CONFIG at replicas
// at once (nats-server refuses to replicate an async stream, with a 5xx
// that would be retried until the context ends).
func TestAsyncStreamIsNotReplicated(t *testing.T) {
	c := startCluster(t)
	nc, err := bus.Connect(bus.ConnectOptions{URL: c.url(0), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for { // the meta leader may not be elected yet
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = js.CreateStream(actx, jetstream.StreamConfig{Name: bus.StreamWork, Subjects: []string{bus.WorkRoot + ".>"},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, PersistMode: jetstream.AsyncPersistMode})
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = tryOpenReplicated(t, c.url(0))
	var ce *api.ComputeError
	if !errors.As(err, &ce) || ce.Code != api.CodeInvalidConfig || ce.Details.Path == nil || *ce.Details.Path != "replicas" ||
		!strings.Contains(ce.Message, "nats stream rm") {
		t.Fatalf("OpenStores with 3 replicas over an async stream: %v (want INVALID_CONFIG at replicas)", err)
	}
}
