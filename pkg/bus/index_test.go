package bus_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// kindOf is the facet of a rec: its N's parity.
func kindOf(r *rec) []string { return []string{fmt.Sprintf("odd=%v", r.N%2 == 1)} }

func startIndex(t *testing.T, st *bus.Stores) *bus.Index[rec] {
	t.Helper()
	ix, err := bus.NewIndex(bus.NewTable[rec](st.Instances, "rec"), bus.IndexOptions[rec]{Facets: kindOf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Stop)
	return ix
}

// listAll pages through the index (limit per page, with facets and keep)
// and returns the ids in order and the records by id.
func listAll(t *testing.T, ix *bus.Index[rec], limit int, facets []string, keep func(*rec) bool) ([]string, map[string]rec) {
	t.Helper()
	ctx := testCtx(t)
	var ids []string
	recs := map[string]rec{}
	cursor := ""
	for {
		page, err := ix.List(ctx, "acme", limit, cursor, facets, keep)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > limit {
			t.Fatalf("a page of %d with limit %d", len(page.Items), limit)
		}
		for _, r := range page.Items {
			id := fmt.Sprintf("inst_%04d", r.N/10)
			ids = append(ids, id)
			recs[id] = r
		}
		if cursor = page.NextCursor; cursor == "" {
			return ids, recs
		}
	}
}

// A list from the index holds every record written before it, through
// another connection, with its value as last written, and none deleted
// before it: right after each write, without waiting.
func TestIndexListHoldsEveryWriteBeforeIt(t *testing.T) {
	env := bustest.Start(t)
	ctx := testCtx(t)
	raw := bus.NewTable[rec](env.Stores.Instances, "rec")
	reader, err := bus.OpenStores(ctx, env.Connect(t), bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ix := startIndex(t, reader)
	for i := range 60 {
		id := fmt.Sprintf("inst_%04d", i)
		rev, err := raw.Create(ctx, "acme", id, rec{N: i * 10})
		if err != nil {
			t.Fatal(err)
		}
		if ids, _ := listAll(t, ix, 7, nil, nil); len(ids) != i+1 || ids[i] != id {
			t.Fatalf("list right after creating %s: %v", id, ids)
		}
		if _, _, err := raw.MutateAt(ctx, "acme", id, rec{N: i * 10}, rev, func(r *rec) error { r.N++; return nil }); err != nil {
			t.Fatal(err)
		}
		if _, recs := listAll(t, ix, 1000, nil, nil); recs[id].N != i*10+1 {
			t.Fatalf("list right after updating %s: %+v", id, recs[id])
		}
		if i%3 == 0 {
			if err := raw.Remove(ctx, "acme", id); err != nil {
				t.Fatal(err)
			}
			if ids, _ := listAll(t, ix, 1000, nil, nil); slices.Contains(ids, id) {
				t.Fatalf("list right after deleting %s holds it", id)
			}
			if _, err := raw.Create(ctx, "acme", id, rec{N: i * 10}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A second index started now loads everything before its first list.
	if ids, _ := listAll(t, startIndex(t, reader), 1000, nil, nil); len(ids) != 60 {
		t.Fatalf("a new index lists %d records, want 60", len(ids))
	}
}

// Pages come in id order from the cursor on; a facet narrows the walk and
// keep filters, and a record whose facet changed moves to its new set.
// Records of other tenants never show.
func TestIndexFacetsAndPages(t *testing.T) {
	env := bustest.Start(t)
	ctx := testCtx(t)
	raw := bus.NewTable[rec](env.Stores.Instances, "rec")
	for i := range 50 {
		if _, err := raw.Create(ctx, "acme", fmt.Sprintf("inst_%04d", i), rec{N: i*10 + i%2}); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Create(ctx, "globex", fmt.Sprintf("inst_%04d", i), rec{N: i * 10}); err != nil {
			t.Fatal(err)
		}
	}
	ix := startIndex(t, env.Stores)
	odd := func(r *rec) bool { return r.N%2 == 1 }
	cases := []struct {
		name   string
		facets []string
		keep   func(*rec) bool
		want   int
	}{
		{"all", nil, nil, 50},
		{"odd by facet", []string{"odd=true"}, odd, 25},
		{"odd by keep alone", nil, odd, 25},
		{"odd, multiple of 3", []string{"odd=true"}, func(r *rec) bool { return odd(r) && (r.N/10)%3 == 0 }, 8},
		{"no such facet", []string{"odd=maybe"}, nil, 0},
	}
	for _, c := range cases {
		for _, limit := range []int{1, 4, 1000} {
			ids, _ := listAll(t, ix, limit, c.facets, c.keep)
			if len(ids) != c.want || !slices.IsSorted(ids) {
				t.Errorf("%s, limit %d: %d ids %v, want %d in order", c.name, limit, len(ids), ids, c.want)
			}
		}
	}
	if _, _, err := raw.Mutate(ctx, "acme", "inst_0002", func(r *rec) error { r.N = 21; return nil }); err != nil {
		t.Fatal(err)
	}
	if ids, _ := listAll(t, ix, 10, []string{"odd=true"}, odd); len(ids) != 26 || !slices.Contains(ids, "inst_0002") {
		t.Errorf("after inst_0002 turned odd: %d odd ids %v", len(ids), ids)
	}
	if _, err := ix.List(ctx, "acme", bus.MaxPageSize+1, "", nil, nil); !api.IsCode(err, api.CodeInvalidInput) {
		t.Errorf("limit above the maximum: %v, want INVALID_INPUT", err)
	}
	if page, err := ix.List(ctx, "initech", 10, "", nil, nil); err != nil || len(page.Items) != 0 || page.Items == nil {
		t.Errorf("a tenant without records: %+v, %v; want an empty page", page, err)
	}
}

// On a replicated bucket a list from an index read through another node
// holds every record written before it; so it does while the index's
// node is down (its connection moves to another node and the watch
// resumes from the last sequence it applied) and after that node
// restarted.
func TestReplicatedIndexAcrossNodeLoss(t *testing.T) {
	c := startCluster(t)
	writer := openReplicated(t, c.url(0))
	ix := startIndex(t, openReplicated(t, c.url(1)))
	raw := bus.NewTable[rec](writer.Instances, "rec")
	ctx := testCtx(t)
	n := 0
	write := func(when string, count int) {
		t.Helper()
		for range count {
			id := fmt.Sprintf("inst_%04d", n)
			if _, err := raw.Create(ctx, "acme", id, rec{N: n * 10}); err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			n++
			if ids, _ := listAll(t, ix, 1000, nil, nil); len(ids) != n || ids[n-1] != id {
				t.Fatalf("%s: list right after creating %s holds %d records (last %v)", when, id, len(ids), ids[len(ids)-1:])
			}
		}
	}
	write("all nodes up", 30)
	c.srvs[1].Shutdown()
	c.srvs[1].WaitForShutdown()
	write("the index's node down", 30)
	c.start(t, 1)
	write("the index's node restarted", 30)
	if got := ix.Len("acme"); got != n {
		t.Fatalf("index holds %d records, want %d", got, n)
	}
	if ids, _ := listAll(t, ix, 1000, []string{"odd=false"}, nil); len(ids) != n || !strings.HasPrefix(ids[0], "inst_") {
		t.Fatalf("facet odd=false: %d ids, want %d", len(ids), n)
	}
}

// Each visits every record of every tenant, tenant by tenant in id order,
// more than one batch of them, every write before it included; an error
// of fn ends it.
func TestIndexEach(t *testing.T) {
	env := bustest.Start(t)
	ctx := testCtx(t)
	raw := bus.NewTable[rec](env.Stores.Instances, "rec")
	ix := startIndex(t, env.Stores)
	var want []string
	for _, tenant := range []string{"acme", "globex"} {
		for i := range 300 {
			id := fmt.Sprintf("inst_%04d", i)
			if _, err := raw.Create(ctx, tenant, id, rec{N: i}); err != nil {
				t.Fatal(err)
			}
			want = append(want, tenant+"."+id)
		}
	}
	var got []string
	err := ix.Each(ctx, func(tenant, id string, v rec) error {
		if fmt.Sprintf("inst_%04d", v.N) != id {
			t.Errorf("%s.%s holds %+v", tenant, id, v)
		}
		got = append(got, tenant+"."+id)
		return nil
	})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Each: %d records (%v), want %d in order", len(got), err, len(want))
	}
	stop := errors.New("enough")
	if err := ix.Each(ctx, func(string, string, rec) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("Each with a failing fn: %v, want its error", err)
	}
}

// concurrentCreatesThenLists has writers goroutines each create records
// and update each one right after (as the reconciler moves a new
// instance's phase), and after every create list the tenant from ix:
// the list must hold every record that writer has created so far, each
// acknowledged before the list was asked. Another goroutine keeps
// updating the records created so far (the reconciler's passes), so the
// lists race writes of records older than them.
func concurrentCreatesThenLists(t *testing.T, writer *bus.Stores, ix *bus.Index[rec], writers, each int) {
	t.Helper()
	raw := bus.NewTable[rec](writer.Instances, "rec")
	ctx := testCtx(t)
	// bump changes a record, keeping its number (N/1000).
	bump := func(r *rec) error { r.N = r.N/1000*1000 + (r.N+1)%1000; return nil }
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	created := make(chan string, writers*each)
	done := make(chan struct{})
	updater := sync.WaitGroup{}
	updater.Go(func() { // the reconciler: moves records created so far, again and again
		var ids []string
		for k := 0; ; k++ {
			select {
			case <-done:
				return
			case id := <-created:
				ids = append(ids, id)
			default:
			}
			if len(ids) == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			if _, _, err := raw.Mutate(ctx, "acme", ids[k%len(ids)], bump); err != nil {
				errs <- err
				return
			}
		}
	})
	for w := range writers {
		wg.Go(func() {
			var mine []string
			for i := range each {
				n := w*each + i
				id := fmt.Sprintf("inst_%04d", n)
				rev, err := raw.Create(ctx, "acme", id, rec{N: n * 1000})
				if err != nil {
					errs <- err
					return
				}
				mine = append(mine, id)
				created <- id
				for k := range 2 {
					if _, rev, err = raw.MutateAt(ctx, "acme", id, rec{N: n*1000 + k}, rev, bump); err != nil {
						errs <- err
						return
					}
				}
				have := map[string]bool{}
				cursor := ""
				for {
					page, err := ix.List(ctx, "acme", 1000, cursor, nil, nil)
					if err != nil {
						errs <- err
						return
					}
					for _, r := range page.Items {
						have[fmt.Sprintf("inst_%04d", r.N/1000)] = true
					}
					if cursor = page.NextCursor; cursor == "" {
						break
					}
				}
				for _, id := range mine {
					if !have[id] {
						errs <- fmt.Errorf("writer %d: a list after its create %d lacks %s, acknowledged before it (%d listed)", w, i, id, len(have))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	updater.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Lists from the index hold every record created before them while
// several goroutines create and update records and list at once: a list
// whose stream info answered before the watch applied later writes must
// neither wipe the index nor return from a partly loaded one.
func TestIndexListUnderConcurrentCreates(t *testing.T) {
	env := bustest.Start(t)
	reader, err := bus.OpenStores(testCtx(t), env.Connect(t), bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	concurrentCreatesThenLists(t, env.Stores, startIndex(t, reader), 6, 20)
}

// The same on a 3-node cluster, the index read through another node than
// the writer's (compose's replicated buckets).
func TestReplicatedIndexListUnderConcurrentCreates(t *testing.T) {
	c := startCluster(t)
	concurrentCreatesThenLists(t, openReplicated(t, c.url(0)), startIndex(t, openReplicated(t, c.url(1))), 6, 15)
}

// messageGets counts the message gets (STREAM.MSG.GET, DIRECT.GET) the
// server receives from now on: each call answers those received since
// the one before.
func messageGets(t *testing.T, env *bustest.Env) func() int64 {
	t.Helper()
	counter := env.Connect(t)
	sub, err := counter.SubscribeSync("$JS.API.>")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := counter.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() int64 {
		if err := counter.Flush(); err != nil { // every request sent before is in sub's queue
			t.Fatal(err)
		}
		n := int64(0)
		for {
			if pending, _, _ := sub.Pending(); pending == 0 {
				return n
			}
			m, err := sub.NextMsg(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(m.Subject, "$JS.API.STREAM.MSG.GET.") || strings.HasPrefix(m.Subject, "$JS.API.DIRECT.GET.") {
				n++
			}
		}
	}
}

// TestListIndexServesCachedPagesWithoutReads: a list index (secrets,
// accounts, pools) keeps its records, so a page of 50 costs no read of the
// bucket, and a record written since is listed as written.
func TestListIndexServesCachedPagesWithoutReads(t *testing.T) {
	env := bustest.Start(t)
	ctx := testCtx(t)
	table := bus.NewTable[rec](env.Stores.Secrets, "rec")
	for i := range 50 {
		if _, err := table.Create(ctx, "acme", fmt.Sprintf("inst_%04d", i), rec{N: i * 10}); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := bus.NewListIndex(table, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Stop)
	gets := messageGets(t, env)
	listAll(t, ix, 1000, nil, nil) // loaded and caught up
	old, rev, err := table.Get(ctx, "acme", "inst_0007")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := table.MutateAt(ctx, "acme", "inst_0007", old, rev, func(r *rec) error { r.N = 71; return nil }); err != nil {
		t.Fatal(err)
	}
	gets()
	_, recs := listAll(t, ix, 1000, nil, nil)
	if calls := gets(); calls != 0 || len(recs) != 50 || recs["inst_0007"].N != 71 {
		t.Fatalf("a list of 50 records: %d message gets (want none), %d records, inst_0007 %+v (want N 71)", calls, len(recs), recs["inst_0007"])
	}
}

// With IndexOptions.CacheBytes, a page of cached records reads nothing from
// the bucket (no message get reaches the server), and holds each record as last written;
// records beyond the bound are read from the bucket, those written longest
// ago having made room.
func TestIndexCacheServesPagesWithoutReads(t *testing.T) {
	env := bustest.Start(t)
	ctx := testCtx(t)
	table := bus.NewTable[rec](env.Stores.Instances, "rec")
	start := func(cacheBytes int) *bus.Index[rec] {
		ix, err := bus.NewIndex(table, bus.IndexOptions[rec]{Facets: kindOf, CacheBytes: cacheBytes})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ix.Stop)
		return ix
	}
	for i := range 50 {
		if _, err := table.Create(ctx, "acme", fmt.Sprintf("inst_%04d", i), rec{N: i * 10}); err != nil {
			t.Fatal(err)
		}
	}
	gets := messageGets(t, env)
	apiCalls := func(ix *bus.Index[rec]) (int64, map[string]rec) {
		listAll(t, ix, 1000, nil, nil) // loaded and caught up
		gets()
		_, recs := listAll(t, ix, 1000, nil, nil)
		return gets(), recs
	}
	cached := start(1 << 20)
	if _, _, err := table.MutateAt(ctx, "acme", "inst_0007", rec{N: 70}, 1+7, func(r *rec) error { r.N = 71; return nil }); err != nil {
		t.Fatal(err)
	}
	calls, recs := apiCalls(cached)
	if calls != 0 || len(recs) != 50 || recs["inst_0007"].N != 71 {
		t.Fatalf("a list of 50 cached records: %d message gets (want none), %d records, inst_0007 %+v (want N 71)",
			calls, len(recs), recs["inst_0007"])
	}
	small := start(10 * 200) // room for a few records of about 100 bytes (each counted with its overhead)
	calls, recs = apiCalls(small)
	if calls < 30 || len(recs) != 50 || recs["inst_0007"].N != 71 {
		t.Fatalf("a list of 50 records, a few cached: %d message gets (want one per record not cached), %d records, inst_0007 %+v",
			calls, len(recs), recs["inst_0007"])
	}
}

// counted is a record whose decodes are counted (decodes), to tell a page
// built from the cached JSON from one decoded again.
type counted struct {
	N int `json:"n"`
}

// decodes counts counted's decodes.
var decodes atomic.Int64

func (c *counted) UnmarshalJSON(b []byte) error {
	decodes.Add(1)
	type plain counted
	return json.Unmarshal(b, (*plain)(c))
}

// ListJSON's pages are json.Marshal's of List's, page by page with the
// same cursors, facets and filter, from cached records and from records
// read from the bucket; a page of cached records decodes none of them
// (List decodes each).
func TestIndexListJSONIsListEncodedWithoutDecodingCachedRecords(t *testing.T) {
	env := bustest.Start(t)
	ctx := testCtx(t)
	table := bus.NewTable[counted](env.Stores.Instances, "rec")
	for i := range 50 {
		if _, err := table.Create(ctx, "acme", fmt.Sprintf("inst_%04d", i), counted{N: i*10 + i%2}); err != nil {
			t.Fatal(err)
		}
	}
	odd := func(c *counted) bool { return c.N%2 == 1 }
	oddFacet := func(c *counted) []string { return []string{fmt.Sprintf("odd=%v", c.N%2 == 1)} }
	for _, cacheBytes := range []int{1 << 20, 10 * 200, 0} { // all, a few, no records cached
		ix, err := bus.NewIndex(table, bus.IndexOptions[counted]{Facets: oddFacet, CacheBytes: cacheBytes})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ix.Stop)
		for _, c := range []struct {
			limit  int
			facets []string
			keep   func(*counted) bool
		}{{7, nil, nil}, {1000, nil, nil}, {4, []string{"odd=true"}, odd}, {3, nil, odd}, {5, []string{"odd=false"}, odd}} {
			cursor, pages := "", 0
			for {
				page, err := ix.List(ctx, "acme", c.limit, cursor, c.facets, c.keep)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := ix.ListJSON(ctx, "acme", c.limit, cursor, c.facets, c.keep)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := json.Marshal(page)
				if string(raw) != string(want) {
					t.Fatalf("cache %d, limit %d, facets %v, after %q: ListJSON\n%s\nList encoded\n%s", cacheBytes, c.limit, c.facets, cursor, raw, want)
				}
				if pages++; page.NextCursor == "" || pages > 100 {
					break
				}
				cursor = page.NextCursor
			}
		}
		if cacheBytes == 1<<20 {
			before := decodes.Load()
			if _, err := ix.ListJSON(ctx, "acme", 1000, "", nil, nil); err != nil {
				t.Fatal(err)
			}
			afterJSON := decodes.Load()
			if _, err := ix.List(ctx, "acme", 1000, "", nil, nil); err != nil {
				t.Fatal(err)
			}
			if byJSON, byList := afterJSON-before, decodes.Load()-afterJSON; byJSON != 0 || byList != 50 {
				t.Fatalf("a page of 50 cached records decoded %d records for ListJSON (want none), %d for List (want 50)", byJSON, byList)
			}
		}
	}
}

// TestIndexReloadsAfterStreamPurge: messages removed through the stream's
// purge API (by subject, or all of them) write no message the watch could
// apply; the next list sees the stream hold fewer messages than the index
// has keys and loads it again, so a purged record is not listed from the
// index's memory (a list index serves its records cached). KV deletes and
// purges, which write markers, cause no reload.
func TestIndexReloadsAfterStreamPurge(t *testing.T) {
	env := bustest.Start(t)
	ctx := testCtx(t)
	table := bus.NewTable[rec](env.Stores.Secrets, "rec")
	val := func(i int) rec { return rec{N: i*10 + i%2} } // inst_000i, odd when i is
	for i := range 6 {
		if _, err := table.Create(ctx, "acme", fmt.Sprintf("inst_%04d", i), val(i)); err != nil {
			t.Fatal(err)
		}
	}
	var log bustest.LogBuffer
	ix, err := bus.NewIndex(table, bus.IndexOptions[rec]{Facets: kindOf, CacheBytes: bus.ListIndexCacheBytes,
		Logger: zerolog.New(&log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Stop)
	const reload = "messages were purged"
	want := func(step string, reloads int, ids ...string) {
		t.Helper()
		got, _ := listAll(t, ix, 1000, nil, nil)
		odd, _ := listAll(t, ix, 1000, []string{"odd=true"}, nil)
		var wantOdd []string
		for _, id := range ids {
			if n := id[len(id)-1] - '0'; n%2 == 1 {
				wantOdd = append(wantOdd, id)
			}
		}
		if !slices.Equal(got, ids) || !slices.Equal(odd, wantOdd) || strings.Count(log.String(), reload) != reloads {
			t.Fatalf("%s: listed %v (odd %v), want %v (odd %v); %d reloads, want %d", step, got, odd, ids, wantOdd,
				strings.Count(log.String(), reload), reloads)
		}
	}
	want("loaded", 0, "inst_0000", "inst_0001", "inst_0002", "inst_0003", "inst_0004", "inst_0005")

	// Markers: a KV delete, a KV purge, a delete of a key never written,
	// a record created again after its delete.
	if err := env.Stores.Secrets.Delete(ctx, bus.RecordKey("acme", "inst_0000")); err != nil {
		t.Fatal(err)
	}
	if err := env.Stores.Secrets.Purge(ctx, bus.RecordKey("acme", "inst_0002")); err != nil {
		t.Fatal(err)
	}
	if err := env.Stores.Secrets.Delete(ctx, bus.RecordKey("acme", "inst_0009")); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Create(ctx, "acme", "inst_0000", val(0)); err != nil {
		t.Fatal(err)
	}
	want("markers", 0, "inst_0000", "inst_0001", "inst_0003", "inst_0004", "inst_0005")

	stream, err := env.Stores.JS.Stream(ctx, "KV_"+env.Stores.Secrets.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	purge := func(key string) {
		t.Helper()
		if err := stream.Purge(ctx, jetstream.WithPurgeSubject("$KV."+env.Stores.Secrets.Bucket()+"."+key)); err != nil {
			t.Fatal(err)
		}
	}
	purge(bus.RecordKey("acme", "inst_0003"))
	want("a record purged from the stream", 1, "inst_0000", "inst_0001", "inst_0004", "inst_0005")

	purge(bus.RecordKey("acme", "inst_0005"))
	if _, err := table.Create(ctx, "acme", "inst_0006", val(6)); err != nil {
		t.Fatal(err)
	}
	want("a record purged, then one created", 2, "inst_0000", "inst_0001", "inst_0004", "inst_0006")

	purge(bus.RecordKey("acme", "inst_0009")) // a marker: nothing listed changes, the index reloads
	want("a marker purged", 3, "inst_0000", "inst_0001", "inst_0004", "inst_0006")

	if err := stream.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Create(ctx, "acme", "inst_0007", val(7)); err != nil {
		t.Fatal(err)
	}
	want("the stream purged, then one created", 4, "inst_0007")

	// The stream's last message purged: the reloaded index is caught up
	// though no message has the stream's last sequence.
	if err := env.Stores.Secrets.Delete(ctx, bus.RecordKey("acme", "inst_0007")); err != nil {
		t.Fatal(err)
	}
	if err := env.Stores.Secrets.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1)); err != nil {
		t.Fatal(err)
	}
	want("the last message, a marker, purged", 5)
}
