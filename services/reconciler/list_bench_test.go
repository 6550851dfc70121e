package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// BenchmarkListAtScale seeds the instances bucket with settled instances
// (written straight to KV, asynchronously in parallel) up to each
// inventory of COMPUTE_BENCH_INVENTORY (default "1000,10000,100000") and
// prints, per inventory, through the bus against one reconciler:
// instances.get, instances.list's first page, a list by a pool holding 10 %
// of the instances and by a phase 1 % are in (p50 / p99 of
// COMPUTE_BENCH_SAMPLES, default 200); the same list pages answered the way
// main did before the index (Table.List behind an endpoint of its own:
// every key of the tenant listed, then records read one by one;
// COMPUTE_BENCH_BEFORE samples, default 5, 0 skips it); the baselines of one
// run (a micro echo through pkg/bus, a bare KV get); and memory: the heap a
// fresh instance index takes, the time it takes to load, the process's
// heap and RSS (the embedded nats-server included). Run it once:
//
//	go test -run '^$' -bench ListAtScale -benchtime 1x -timeout 60m ./services/reconciler/
func BenchmarkListAtScale(b *testing.B) {
	var sizes []int
	for s := range strings.SplitSeq(envString("COMPUTE_BENCH_INVENTORY", "1000,10000,100000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("COMPUTE_BENCH_INVENTORY: %q is no inventory", s)
		}
		sizes = append(sizes, n)
	}
	samples, before := bustest.EnvInt("COMPUTE_BENCH_SAMPLES", 200), envCount("COMPUTE_BENCH_BEFORE", 5)
	for b.Loop() {
		s := newListScale(b)
		rows := []string{
			"| inventory | get p50 / p99 | list first page p50 / p99 | by pool (10 %) p50 / p99 | by phase (1 %) p50 / p99 | " +
				"before: first page / by phase (median) | index heap, load | resync: time, heap peak | every instance read: now | before | " +
				"process heap / RSS |",
			"|---|---|---|---|---|---|---|---|---|---|---|",
		}
		for _, n := range sizes {
			s.seed(n)
			rows = append(rows, s.measure(n, samples, before))
		}
		echo, kvGet := s.baselines(samples * 5)
		b.Logf("\n%s\nbaselines: micro echo %s, bare KV get %s (p50 / p99)", strings.Join(rows, "\n"), echo, kvGet)
	}
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envCount is bustest.EnvInt that also takes 0.
func envCount(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n >= 0 {
		return n
	}
	return def
}

// listScale is the harness of BenchmarkListAtScale: a reconciler (no
// resync), a second pool, and the old list behind instances.scan.
type listScale struct {
	b      *testing.B
	h      *harness
	small  string // the pool of every tenth instance
	seeded int
}

func newListScale(b *testing.B) *listScale {
	h := newHarness(b, Options{Logger: zerolog.Nop(), ResyncInterval: -1})
	s := &listScale{b: b, h: h, small: h.otherPool()}
	scan, err := bus.StartService(h.env.NC, bus.ServiceConfig{Name: "instances-scan", Version: "0.0.1", Logger: zerolog.Nop(),
		Endpoints: []bus.Endpoint{
			bus.CommandEndpoint(bus.ResourceInstances, "scan", s.scanList),
			{Name: "echo", Subject: "bench.echo", Handler: func(context.Context, *bus.Request) (any, error) { return api.Deleted{ID: "x"}, nil }},
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = scan.Stop() })
	return s
}

// scanList answers a list the way instances.list did before the index.
func (s *listScale) scanList(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstanceListRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	match, err := instanceFilter(in)
	if err != nil {
		return nil, err
	}
	return s.h.rec.instances.List(ctx, req.Tenant, in.Limit, in.Cursor, match)
}

// seedInstance is the i-th seeded instance: settled, running (every
// hundredth stopped), in the harness pool (every tenth in the small one).
func (s *listScale) seedInstance(i int) api.Instance {
	now := time.Now().UTC()
	pool, phase, power := s.h.pool.ID, api.PhaseRunning, api.PowerOn
	if i%10 == 0 {
		pool = s.small
	}
	if i%100 == 1 {
		phase, power = api.PhaseStopped, api.PowerOff
	}
	id := api.NewID(api.PrefixInstance)
	m := s.h.cloud.Seed(id, fmt.Sprintf("web-%06d", i)) // a running machine, so the instance lists as desired
	if power == api.PowerOff {
		s.h.cloud.SetState(m.ID, api.StateStopped)
		m.State = api.StateStopped
	}
	return api.Instance{
		ID: id, TenantID: tenant, PoolID: pool, Flavor: "small", Image: "debian-12",
		Name: fmt.Sprintf("web-%06d", i), SSHKeys: []string{benchKey},
		Desired: api.DesiredState{Power: power}, Generation: 1, Version: 3, CreatedAt: now, UpdatedAt: now,
		Status: api.InstanceStatus{Phase: phase, ObservedGeneration: 1, CreateRequested: true, CreateRequestedAt: &now,
			Machine: &m},
	}
}

// benchKey is the SSH key of every seeded instance.
const benchKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl bench"

// seed writes instances until the bucket holds n, asynchronously (many
// publishes in flight), as the records of settled instances.
func (s *listScale) seed(n int) {
	s.b.Helper()
	js, err := jetstream.New(s.h.env.NC, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		s.b.Fatal(err)
	}
	start := time.Now()
	for i := s.seeded; i < n; i++ {
		inst := s.seedInstance(i)
		data, err := json.Marshal(inst)
		if err != nil {
			s.b.Fatal(err)
		}
		subject := "$KV." + bus.BucketInstances + "." + bus.RecordKey(tenant, inst.ID)
		for {
			_, err := js.PublishAsync(subject, data, jetstream.WithStallWait(time.Minute))
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				s.b.Fatal(err)
			}
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		s.b.Fatal("seeding did not complete")
	}
	s.b.Logf("seeded %d instances in %v", n-s.seeded, time.Since(start).Round(time.Millisecond))
	s.seeded = n
}

// latencies runs fn count times and returns its p50 and p99.
func (s *listScale) latencies(count int, fn func() error) (time.Duration, time.Duration) {
	s.b.Helper()
	d := make([]time.Duration, 0, count)
	for range count {
		start := time.Now()
		if err := fn(); err != nil {
			s.b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

func pair(p50, p99 time.Duration) string { return ms(p50) + " / " + ms(p99) + " ms" }

// call sends verb (list or scan) with a deadline the old scan meets at
// 100,000 instances on a loaded machine.
func (s *listScale) call(verb string, req api.InstanceListRequest, page *api.List[api.Instance]) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return bus.Call(ctx, s.h.env.NC, bus.Command(tenant, bus.ResourceInstances, verb), req, page)
}

// list sends verb (list or scan) and checks the page is full.
func (s *listScale) list(verb string, req api.InstanceListRequest) error {
	var page api.List[api.Instance]
	if err := s.call(verb, req, &page); err != nil {
		return err
	}
	if len(page.Items) != bus.DefaultPageSize {
		return fmt.Errorf("%s %+v: a page of %d", verb, req, len(page.Items))
	}
	return nil
}

// measure prints one row of the table at inventory n.
func (s *listScale) measure(n, samples, before int) string {
	s.b.Helper()
	first := api.InstanceListRequest{}
	byPool := api.InstanceListRequest{PoolID: s.small}
	byPhase := api.InstanceListRequest{Phase: api.PhaseStopped}
	byPhase.Limit = min(bus.DefaultPageSize, n/100) // a full page of the phase's instances
	if err := s.list("list", first); err != nil {   // the index catches up
		s.b.Fatal(err)
	}
	var id string
	{
		var page api.List[api.Instance]
		if err := s.h.call("list", api.InstanceListRequest{ListRequest: api.ListRequest{Limit: 1}}, &page); err != nil {
			s.b.Fatal(err)
		}
		id = page.Items[0].ID
	}
	get := pair(s.latencies(samples*5, func() error { _, err := s.h.get(id); return err }))
	page := pair(s.latencies(samples, func() error { return s.list("list", first) }))
	pool := pair(s.latencies(samples, func() error { return s.list("list", byPool) }))
	phase := pair(s.latencies(samples, func() error { return s.listLimit("list", byPhase) }))
	old := "—"
	if before > 0 {
		oldPage, _ := s.latencies(before, func() error { return s.list("scan", first) })
		oldPhase, _ := s.latencies(before, func() error { return s.listLimit("scan", byPhase) })
		old = ms(oldPage) + " / " + ms(oldPhase) + " ms"
	}
	resync := s.resync(n, before)
	heap, load := s.indexHeap()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %.1f MB, %v | %s | %.0f / %.0f MB |", n, get, page, pool, phase, old,
		float64(heap)/1e6, load.Round(time.Millisecond), resync, float64(m.HeapInuse)/1e6, float64(rss())/1e6)
}

// listLimit is list with the request's own limit (0: the default page).
func (s *listScale) listLimit(verb string, req api.InstanceListRequest) error {
	if req.Limit == 0 {
		return s.list(verb, req)
	}
	var page api.List[api.Instance]
	if err := s.call(verb, req, &page); err != nil {
		return err
	}
	if len(page.Items) != req.Limit {
		return fmt.Errorf("%s %+v: a page of %d", verb, req, len(page.Items))
	}
	return nil
}

// resync runs one resync of the n seeded (settled, listed as desired)
// instances, failing if it queued any, and the walk over every instance
// it starts with, alone, as it is now (Index.Each) and as it was
// (Table.Each: every key listed, then one read at a time; skipped with
// before 0). Each figure is a time and the heap's peak above the heap
// before it (sampled every 5 ms; garbage not yet collected included).
// The memory provider's list sorts every machine for each page, so the
// resync's own time and peak hold that too.
func (s *listScale) resync(n, before int) string {
	s.b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	whole := peakDuring(func() {
		queued, err := s.h.rec.Resync(ctx)
		if err != nil || queued != 0 {
			s.b.Fatalf("resync of %d settled instances: queued %d, %v", n, queued, err)
		}
	})
	walk := peakDuring(func() {
		if err := s.h.rec.index.Each(ctx, func(string, string, api.Instance) error { return nil }); err != nil {
			s.b.Fatal(err)
		}
	})
	old := "—"
	if before > 0 {
		old = peakDuring(func() {
			if err := s.h.rec.instances.Each(ctx, "", func(string, string, api.Instance, uint64) error { return nil }); err != nil {
				s.b.Fatal(err)
			}
		})
	}
	return whole + " | " + walk + " | " + old
}

// peakDuring runs fn and returns how long it took and the heap's peak
// above the heap before it.
func peakDuring(fn func()) string {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	base, peak := m.HeapAlloc, m.HeapAlloc
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}
		}
	}()
	start := time.Now()
	fn()
	took := time.Since(start)
	close(done)
	<-sampled
	return fmt.Sprintf("%v, %.0f MB", took.Round(time.Millisecond), float64(peak-base)/1e6)
}

// indexHeap starts a second instance index and returns the heap it holds
// once loaded and how long it took to load (to answer its first list).
func (s *listScale) indexHeap() (uint64, time.Duration) {
	s.b.Helper()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	ix, err := instanceIndex(s.h.rec.instances, s.h.rec.o)
	if err != nil {
		s.b.Fatal(err)
	}
	defer ix.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := ix.List(ctx, tenant, 1, "", nil, nil); err != nil {
		s.b.Fatal(err)
	}
	load := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if ix.Len(tenant) != s.seeded {
		s.b.Fatalf("index holds %d of %d", ix.Len(tenant), s.seeded)
	}
	return m1.HeapAlloc - min(m0.HeapAlloc, m1.HeapAlloc), load
}

// baselines are a micro echo through pkg/bus and a bare KV get (p50 / p99).
func (s *listScale) baselines(count int) (string, string) {
	s.b.Helper()
	echo := pair(s.latencies(count, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var out api.Deleted
		return bus.Call(ctx, s.h.env.NC, "bench.echo", api.IDRequest{ID: "x"}, &out)
	}))
	var key string
	{
		keys, err := s.h.env.Stores.Instances.ListKeysFiltered(context.Background(), tenant+".>")
		if err != nil {
			s.b.Fatal(err)
		}
		key = <-keys.Keys()
		_ = keys.Stop()
	}
	kvGet := pair(s.latencies(count, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.h.env.Stores.Instances.Get(ctx, key)
		return err
	}))
	return echo, kvGet
}

// rss is the process's resident set size in bytes (Linux; 0 elsewhere).
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
