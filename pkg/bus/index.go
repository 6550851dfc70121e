package bus

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/btree"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
)

// IndexOptions configures NewIndex.
type IndexOptions[T any] struct {
	// View is what the index keeps in memory of a record: the fields the
	// lists' filters read (default: the whole record). A page's records
	// are read from the bucket, so a view need hold nothing else.
	View func(v *T) T
	// Facets are the indexed values of a record ("pool=pool_…",
	// "phase=Running"), each kept as a sorted set of ids, so a list that
	// requires a facet walks only the records that have it (nil: none).
	// It must be a function of the view alone: a record's old facets are
	// computed again from its stored view when it changes.
	Facets func(view *T) []string
	// Logger receives a line when the index's watch restarts.
	Logger zerolog.Logger
	// CacheBytes bounds the memory, in bytes of stored JSON (plus
	// cacheEntryOverhead per record), of the records the index keeps as
	// the watch delivered them, so that a page's cached records cost no
	// read of the bucket (0: none kept, every page record is read). When a
	// record would pass the bound, the records cached longest ago (by
	// their last write) make room first.
	CacheBytes int
}

// Index is an in-memory index of one Table's records, per tenant sorted
// by id, kept from an ordered watch of the whole bucket (one JetStream
// ordered consumer delivering every put and delete in stream order).
// Lists answered from it cost O(page) instead of O(tenant's records):
// the index names a page's ids, the page's records are read from the
// bucket (in parallel, from the stream leader like every read).
//
// Guarantee (the same as Reader.List's): a list holds every record
// written before it started, on a replicated bucket too. Before a list
// walks the index it asks the stream leader for the stream's last
// sequence (stream info) and waits until the watch has applied at least
// that one, with no message at or below it skipped: every write
// acknowledged before is at or below it. A bucket keeps one message per
// key, so a message the watch had not reached yet when its key was
// written again is never delivered; the record comes back only with its
// newer message, further on. The watch therefore notes where its
// delivered sequences jump (a skipped message) and counts that stretch
// as unapplied until a message arrives that the stream had nothing
// after (pending 0), or a restarted watch begins with nothing pending:
// then every key's newest message is applied. A watch that does not
// advance while a list waits (indexStall) is restarted from the last
// sequence applied, one that ends (a closed subscription) too; but first,
// if it has nothing pending and is short of the list's sequence (the
// stream's last messages were purged, so none has it), the stream leader
// is asked for the first message after the one applied: none, and the
// list's sequence counts as applied (the watch's consumer may read a
// replica that lags, so its own "nothing pending" is not enough).
// A stream made again (another creation time) is loaded from scratch.
//
// A message removed through the stream's purge API (`nats stream purge`,
// whole or by subject: not a KV delete or purge, which write a marker) is
// never delivered either. The index counts the keys it holds a message
// of (records, markers and the rest, History 1: one message per key) and
// the catch-up compares them with the stream's message count: more keys
// than messages, beyond the keys written after the count was taken, is a
// removal, and the index loads from scratch (purged). A purge is
// therefore seen by the first list after it that the writes since do not
// outnumber; until then a list may still hold a purged record.
//
// Only for buckets whose messages are removed by newer writes alone (no
// MaxAge): an expired message is never delivered, so an index of a TTL
// bucket would keep expired records. Memory: one view, one id and
// a btree slot per facet per record, and one key per delete marker.
type Index[T any] struct {
	t      *Table[T]
	stream jetstream.Stream
	o      IndexOptions[T]

	mu      sync.RWMutex
	tenants map[string]*tenantIndex[T]
	// cache orders the cached entries (IndexOptions.CacheBytes) by when
	// they were written, oldest first; cacheBytes is what they cost.
	cache      *list.List
	cacheBytes int
	// applied is the stream sequence of the last message applied.
	applied uint64
	// skipped is the lowest sequence of a stretch the watch jumped over
	// (messages removed before it was delivered them, their keys' newer
	// messages perhaps not applied yet); 0 while none is open.
	skipped uint64
	// created is the creation time of the stream the index was loaded
	// from, to tell a bucket made again.
	created time.Time
	// advanced is closed (and replaced) when the watch applies a message
	// or settles while waiting > 0.
	advanced chan struct{}
	waiting  int
	// reset asks the next watch to start over from an empty index (the
	// stream was made again, or purged).
	reset bool
	// settled: the watch had nothing pending after the last message it
	// applied (or when it started), as its consumer saw the stream.
	settled bool
	// records counts the entries of tenants; absent holds the keys whose
	// newest message was applied but which have no entry (delete and
	// purge markers, keys that are not a record, records that do not
	// decode): with records, the keys the stream holds a message of.
	records int
	absent  map[string]struct{}

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// tenantIndex is one tenant's records: all of them, and per facet.
type tenantIndex[T any] struct {
	all     *btree.BTreeG[*indexEntry[T]]
	byFacet map[string]*btree.BTreeG[*indexEntry[T]]
}

// indexEntry is one record in the index: its id, its view and, while
// cached (IndexOptions.CacheBytes), its stored JSON as the watch
// delivered it (never modified: a page reads it outside the lock) and
// its place in the cache's order.
type indexEntry[T any] struct {
	id     string
	view   T
	raw    []byte
	cached *list.Element
}

// cacheEntryOverhead is what a cached record costs besides its JSON
// (the list element, the slice header), counted against CacheBytes.
const cacheEntryOverhead = 96

// indexDegree is the btree degree of the index's sets.
const indexDegree = 32

// indexStall is how long a list waits for a watch that applies nothing
// before the watch is restarted.
const indexStall = 2 * time.Second

// indexFetchers bounds the parallel reads of one page's records.
const indexFetchers = 16

func newIDTree[T any]() *btree.BTreeG[*indexEntry[T]] {
	return btree.NewG(indexDegree, func(a, b *indexEntry[T]) bool { return a.id < b.id })
}

// NewIndex starts an index of t, which must be a table of a bucket of
// OpenStores (its stream is read for the last sequence). The index loads
// in the background; a list waits until it has caught up. Stop it with
// Stop. Errors: INTERNAL (a table of another bucket).
func NewIndex[T any](t *Table[T], o IndexOptions[T]) (*Index[T], error) {
	b, ok := t.kv.(*bucket)
	if !ok {
		return nil, api.Errorf(api.CodeInternal, "index of %s: not a bucket of OpenStores", t.kind)
	}
	if o.View == nil {
		o.View = func(v *T) T { return *v }
	}
	ctx, cancel := context.WithCancel(context.Background())
	ix := &Index[T]{t: t, stream: b.stream, o: o, tenants: map[string]*tenantIndex[T]{}, cache: list.New(), absent: map[string]struct{}{},
		advanced: make(chan struct{}), kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go ix.run(ctx)
	return ix, nil
}

// ListIndexCacheBytes bounds the records a list index (NewListIndex)
// keeps as stored (IndexOptions.CacheBytes), 4 MiB: every record of
// thousands of secrets, accounts or pools, so that a page of them costs
// no KV read (BenchmarkSecretsIsolation, services/secrets: a page of 100
// secrets read from the bucket made another tenant's list p99 1.8× under
// the list quotas).
const ListIndexCacheBytes = 4 << 20

// NewListIndex starts an index of t that keeps only each record's id
// (a zero view, no facets) and, up to ListIndexCacheBytes, the records as
// stored: for a resource whose list has no filter, so that a page of it
// costs its own records' decoding (or reads, of records not cached)
// instead of a listing of every key of the tenant (Reader.List). Its
// lists are Index.List with no facets and no predicate. Errors: those of
// NewIndex.
func NewListIndex[T any](t *Table[T], logger zerolog.Logger) (*Index[T], error) {
	return NewIndex(t, IndexOptions[T]{View: func(*T) T { var zero T; return zero }, Logger: logger,
		CacheBytes: ListIndexCacheBytes})
}

// Stop ends the index's watch and waits for it.
func (ix *Index[T]) Stop() {
	ix.cancel()
	<-ix.done
}

// run keeps the watch going until Stop (or the connection closes for
// good), resuming after the last sequence applied whenever it ends.
func (ix *Index[T]) run(ctx context.Context) {
	defer close(ix.done)
	for ctx.Err() == nil {
		err := ix.watch(ctx)
		if ctx.Err() != nil || errors.Is(err, nats.ErrConnectionClosed) {
			return
		}
		ix.o.Logger.Debug().Err(err).Str("bucket", ix.t.kv.Bucket()).Msg("index watch restarts")
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watch applies the bucket's messages after the last one applied until
// the watcher ends, the index is kicked or ctx ends.
func (ix *Index[T]) watch(ctx context.Context) error {
	opts := []jetstream.WatchOpt{}
	ix.mu.Lock()
	fresh := ix.reset || ix.applied == 0
	ix.mu.Unlock()
	var created time.Time
	if fresh {
		info, err := ix.stream.Info(ctx)
		if err != nil {
			return err
		}
		created = info.Created
	}
	ix.mu.Lock()
	ix.settled = false
	if fresh {
		ix.tenants, ix.applied, ix.skipped, ix.created, ix.reset = map[string]*tenantIndex[T]{}, 0, 0, created, false
		ix.cache, ix.cacheBytes, ix.records, ix.absent = list.New(), 0, 0, map[string]struct{}{}
	} else {
		opts = append(opts, jetstream.ResumeFromRevision(ix.applied+1))
	}
	ix.mu.Unlock()
	w, err := ix.t.kv.WatchAll(ctx, opts...)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	delivered := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ix.kick:
			return errors.New("stalled while a list waited")
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watcher closed")
			}
			switch {
			case e != nil:
				delivered = true
				ix.apply(e)
			case !delivered: // the stream held nothing after the last applied
				ix.settle()
			}
		}
	}
}

// apply records one message of the bucket: a put replaces the record's
// entry, a delete or purge removes it. A message after a jump in the
// sequence opens a skipped stretch (Index); one the stream had nothing
// after when it was sent (Delta 0) closes every stretch.
func (ix *Index[T]) apply(e jetstream.KeyValueEntry) {
	tenant, id, ok := SplitKey(e.Key())
	var view T
	put := ok && e.Operation() == jetstream.KeyValuePut
	if put {
		var v T
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			put = false // a corrupt record lists as absent; a get reports it
		} else {
			view = ix.o.View(&v)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if put {
		delete(ix.absent, e.Key())
	} else {
		ix.absent[e.Key()] = struct{}{}
	}
	if ok {
		ti := ix.tenants[tenant]
		if ti == nil {
			ti = &tenantIndex[T]{all: newIDTree[T](), byFacet: map[string]*btree.BTreeG[*indexEntry[T]]{}}
			ix.tenants[tenant] = ti
		}
		if old, had := ti.all.Delete(&indexEntry[T]{id: id}); had {
			ix.unfacet(ti, old)
			ix.uncache(old)
			ix.records--
		}
		if put {
			entry := &indexEntry[T]{id: id, view: view}
			ti.all.ReplaceOrInsert(entry)
			ix.facet(ti, entry)
			ix.store(entry, e.Value())
			ix.records++
		} else if ti.all.Len() == 0 {
			delete(ix.tenants, tenant)
		}
	}
	if rev := e.Revision(); rev > ix.applied {
		if rev > ix.applied+1 && ix.skipped == 0 {
			ix.skipped = ix.applied + 1
		}
		ix.applied = rev
	}
	if ix.settled = e.Delta() == 0; ix.settled {
		ix.skipped = 0
	}
	ix.notify()
}

// store caches a copy of raw as entry's record when it fits in
// CacheBytes, dropping the records cached longest ago to make room (ix.mu
// held). A copy, because a message's value shares its buffer with the
// message's headers, which the bound does not count.
func (ix *Index[T]) store(entry *indexEntry[T], raw []byte) {
	cost := len(raw) + cacheEntryOverhead
	if cost > ix.o.CacheBytes {
		return
	}
	for ix.cacheBytes+cost > ix.o.CacheBytes {
		ix.uncache(ix.cache.Front().Value.(*indexEntry[T]))
	}
	entry.raw = slices.Clone(raw)
	entry.cached = ix.cache.PushBack(entry)
	ix.cacheBytes += cost
}

// uncache drops entry's cached record, if any (ix.mu held).
func (ix *Index[T]) uncache(entry *indexEntry[T]) {
	if entry.cached == nil {
		return
	}
	ix.cache.Remove(entry.cached)
	ix.cacheBytes -= len(entry.raw) + cacheEntryOverhead
	entry.raw, entry.cached = nil, nil
}

// settle closes every skipped stretch: the watch's consumer started with
// nothing pending, so it has applied every key's newest message.
func (ix *Index[T]) settle() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.skipped, ix.settled = 0, true
	ix.notify()
}

// notify wakes the lists waiting for the index (ix.mu held).
func (ix *Index[T]) notify() {
	if ix.waiting > 0 {
		close(ix.advanced)
		ix.advanced = make(chan struct{})
	}
}

func (ix *Index[T]) facets(entry *indexEntry[T]) []string {
	if ix.o.Facets == nil {
		return nil
	}
	return ix.o.Facets(&entry.view)
}

func (ix *Index[T]) facet(ti *tenantIndex[T], entry *indexEntry[T]) {
	for _, f := range ix.facets(entry) {
		set := ti.byFacet[f]
		if set == nil {
			set = newIDTree[T]()
			ti.byFacet[f] = set
		}
		set.ReplaceOrInsert(entry)
	}
}

func (ix *Index[T]) unfacet(ti *tenantIndex[T], entry *indexEntry[T]) {
	for _, f := range ix.facets(entry) {
		if set := ti.byFacet[f]; set != nil {
			set.Delete(entry)
			if set.Len() == 0 {
				delete(ti.byFacet, f)
			}
		}
	}
}

// catchUp waits until the index has applied every message the stream
// leader held when it was called, none of them skipped (Index), and
// loads it again first if messages were purged. A last sequence below
// the one applied is no reason to reload: the watch may apply later
// writes before the stream info's answer is read. Errors: UNAVAILABLE
// (the stream could not be asked, or ctx ended first).
func (ix *Index[T]) catchUp(ctx context.Context) error {
	info, err := ix.stream.Info(ctx)
	if err != nil {
		return kvError("list", ix.t.kv.Bucket(), err)
	}
	target := info.State.LastSeq
	ix.mu.Lock()
	ix.waiting++
	if !ix.created.IsZero() && !info.Created.Equal(ix.created) {
		ix.reset = true
		ix.kickWatch()
	}
	ix.mu.Unlock()
	defer func() {
		ix.mu.Lock()
		ix.waiting--
		ix.mu.Unlock()
	}()
	stall := time.NewTimer(indexStall)
	defer stall.Stop()
	for {
		ix.mu.RLock()
		applied, skipped, advanced, reset := ix.applied, ix.skipped, ix.advanced, ix.reset
		caught := applied >= target && (skipped == 0 || skipped > target) && !reset
		purged := caught && ix.keysOver(info.State)
		ix.mu.RUnlock()
		if caught && !purged {
			return nil
		}
		if purged {
			ix.reload(info.State)
		}
		select {
		case <-advanced:
			stall.Reset(indexStall)
		case <-stall.C:
			if !ix.nothingAfter(ctx, target) {
				ix.kickWatch()
			}
			stall.Reset(indexStall)
		case <-ctx.Done():
			return api.Errorf(api.CodeUnavailable, "state store list %s: the index is at %d of %d: %v; retry",
				ix.t.kv.Bucket(), applied, target, ctx.Err())
		}
	}
}

// nothingAfter tells whether a settled watch short of target has
// nothing to apply: it asks the stream leader for the first message after
// the one applied, and if there is none and the index has not moved, it
// counts target as applied (every message the stream holds is at or
// below the one applied: those up to target were purged) and wakes the
// lists. An error asking counts as something to apply.
func (ix *Index[T]) nothingAfter(ctx context.Context, target uint64) bool {
	ix.mu.RLock()
	applied, short := ix.applied, ix.settled && ix.skipped == 0 && !ix.reset && ix.applied < target
	ix.mu.RUnlock()
	if !short {
		return false
	}
	_, err := ix.stream.GetMsg(ctx, applied+1, jetstream.WithGetMsgSubject("$KV."+ix.t.kv.Bucket()+".>"))
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.applied != applied || ix.skipped != 0 || ix.reset {
		return false
	}
	ix.applied = target
	ix.notify()
	return true
}

// reload asks the watch to load the index from scratch if it still
// holds more keys than the stream held messages in state, beyond those it
// may have applied since (keysOver): messages were purged.
func (ix *Index[T]) reload(state jetstream.StreamState) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.reset || !ix.keysOver(state) { // another list saw it first
		return
	}
	ix.o.Logger.Info().Str("bucket", ix.t.kv.Bucket()).Int("keys", ix.records+len(ix.absent)).Uint64("messages", state.Msgs).
		Msg("index reloads: messages were purged from the stream")
	ix.reset = true
	ix.kickWatch()
}

// keysOver tells whether the index holds more keys than the stream held
// messages in state plus the sequences applied since (one new key each at
// most): keys are never removed but by the purge API (History 1: one
// message per key, a delete leaves a marker), so then some were purged
// (ix.mu held).
func (ix *Index[T]) keysOver(state jetstream.StreamState) bool {
	keys := uint64(ix.records + len(ix.absent))
	if ix.applied < state.LastSeq || keys <= ix.applied-state.LastSeq {
		return false
	}
	return keys-(ix.applied-state.LastSeq) > state.Msgs
}

// kickWatch makes the watch start again (a kick pending is enough).
func (ix *Index[T]) kickWatch() {
	select {
	case ix.kick <- struct{}{}:
	default:
	}
}

// List returns one page of tenant's records in id order, like
// Reader.List (the same limit, cursor, page-size and MaxPageBytes rules,
// and the same guarantee: every record written before the call is
// considered), answered from the index. keep is the list's one filter
// predicate: it is applied to each record's view to pick the page's ids,
// and again to each record read for the page (a record changed since may
// no longer match; it is left out). facets are facets (IndexOptions.Facets)
// every record keep accepts has: the walk goes over the smallest of their
// sets instead of all the tenant's records. A page costs its own records'
// reads plus the views keep rejects on the way.
// Errors: INVALID_INPUT (path limit), UNAVAILABLE, INTERNAL.
func (ix *Index[T]) List(ctx context.Context, tenant string, limit int, cursor string, facets []string,
	keep func(*T) bool) (api.List[T], error) {
	page := api.List[T]{Items: []T{}}
	next, err := ix.page(ctx, tenant, limit, cursor, facets, keep, true, func(rec *fetched[T]) {
		page.Items = append(page.Items, rec.v)
	})
	if err != nil {
		return api.List[T]{}, err
	}
	page.NextCursor = next
	return page, nil
}

// ListJSON is List answered as api.List[T]'s JSON built from the records
// as stored: a cached record (IndexOptions.CacheBytes) is copied into the
// page, neither decoded nor encoded again, and keep is not applied to it
// again (its view, which keep accepted, is of the same message, and keep
// reads only the view's fields); a record read from the bucket is decoded
// for keep. The bytes are those json.Marshal makes of List's page when the
// stored records are json.Marshal's of T. Only for a table whose stored
// record is what a reply shows: a field T does not have goes out as
// stored (a type that hides stored fields by leaving them out, as
// api.Secret does the value, must use List).
// Errors: those of List.
func (ix *Index[T]) ListJSON(ctx context.Context, tenant string, limit int, cursor string, facets []string,
	keep func(*T) bool) (RawJSON, error) {
	buf := append(make([]byte, 0, 512), `{"items":[`...)
	n := 0
	next, err := ix.page(ctx, tenant, limit, cursor, facets, keep, false, func(rec *fetched[T]) {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, rec.raw...)
		n++
	})
	if err != nil {
		return nil, err
	}
	buf = append(buf, ']')
	if next != "" {
		quoted, err := json.Marshal(next)
		if err != nil {
			return nil, api.Errorf(api.CodeInternal, "cursor %q could not be encoded", next)
		}
		buf = append(append(buf, `,"nextCursor":`...), quoted...)
	}
	return append(buf, '}'), nil
}

// page walks one page of List (or ListJSON), calling add with each record
// the page holds in order, and returns the page's next cursor ("" after
// the last page). decodeCached decodes cached records too (List's items);
// a record read from the bucket is always decoded, for keep.
func (ix *Index[T]) page(ctx context.Context, tenant string, limit int, cursor string, facets []string,
	keep func(*T) bool, decodeCached bool, add func(*fetched[T])) (string, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return "", err
	}
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	if err := ix.catchUp(ctx); err != nil {
		return "", err
	}
	if keep == nil {
		keep = func(*T) bool { return true }
	}
	after, lastID, bytes, n := cursor, "", 0, 0
	for {
		ids, raws, more := ix.candidates(tenant, facets, after, limit-n, keep)
		recs, err := ix.fetch(ctx, tenant, ids, raws, decodeCached)
		if err != nil {
			return "", err
		}
		for i := range recs {
			rec := &recs[i]
			after = ids[i]
			if !rec.found || (rec.decoded && !keep(&rec.v)) {
				continue
			}
			if n > 0 && bytes+len(rec.raw) > MaxPageBytes {
				return lastID, nil
			}
			add(rec)
			n, lastID, bytes = n+1, ids[i], bytes+len(rec.raw)
		}
		if !more {
			return "", nil
		}
		if n == limit {
			return lastID, nil
		}
	}
}

// candidates returns up to n ids of tenant after the id after whose views
// keep accepts, walking the smallest set of facets (all records with
// none), their cached records (nil where not cached), and whether the
// index holds another such id beyond them.
func (ix *Index[T]) candidates(tenant string, facets []string, after string, n int, keep func(*T) bool) ([]string, [][]byte, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ti := ix.tenants[tenant]
	if ti == nil {
		return nil, nil, false
	}
	set := ti.all
	for _, f := range facets {
		s := ti.byFacet[f]
		if s == nil {
			return nil, nil, false
		}
		if s.Len() < set.Len() {
			set = s
		}
	}
	var ids []string
	var raws [][]byte
	more := false
	walk := func(e *indexEntry[T]) bool {
		if !keep(&e.view) {
			return true
		}
		if len(ids) == n {
			more = true
			return false
		}
		ids, raws = append(ids, e.id), append(raws, e.raw)
		return true
	}
	if after == "" {
		set.Ascend(walk)
	} else {
		set.AscendGreaterOrEqual(&indexEntry[T]{id: after + "\x00"}, walk) // the first id > after
	}
	return ids, raws, more
}

// fetched is one record of a page: its JSON as stored and, when decoded,
// its value.
type fetched[T any] struct {
	v       T
	raw     []byte
	decoded bool
	found   bool
}

// fetch takes tenant's records ids from their cached JSON raws (the
// record as of the last message applied, which is at least as new as the
// list's catch-up asks), decoded only with decodeCached, and reads and
// decodes the others, indexFetchers at a time; a record deleted since it
// was indexed is not found. Errors: UNAVAILABLE, INTERNAL.
func (ix *Index[T]) fetch(ctx context.Context, tenant string, ids []string, raws [][]byte, decodeCached bool) ([]fetched[T], error) {
	recs := make([]fetched[T], len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, indexFetchers)
	var wg sync.WaitGroup
	for i, id := range ids {
		if raws[i] != nil {
			recs[i].raw, recs[i].found, recs[i].decoded = raws[i], true, decodeCached
			if decodeCached {
				if err := json.Unmarshal(raws[i], &recs[i].v); err != nil {
					return nil, api.Errorf(api.CodeInternal, "record %s/%s is corrupt: %v", ix.t.kv.Bucket(), RecordKey(tenant, id), err)
				}
			}
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			raw, _, err := getRaw(ctx, ix.t.kv, RecordKey(tenant, id), &recs[i].v)
			switch {
			case err == nil:
				recs[i].raw, recs[i].found, recs[i].decoded = raw, true, true
			case !errors.Is(err, errNotFound):
				errs[i] = err
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// Each calls fn with every record of every tenant the index holds once
// it has caught up (so every record written before the call, as
// Table.Each), tenant by tenant in id order, skipping records deleted
// since they were indexed. The records are read from the bucket
// indexFetchers at a time, eachBatch ids per round, so a scan of the whole
// bucket costs neither a listing of its keys nor one read at a time. An
// error of fn ends it and is returned. Errors: those of fn, UNAVAILABLE,
// INTERNAL (undecodable value).
func (ix *Index[T]) Each(ctx context.Context, fn func(tenant, id string, v T) error) error {
	if err := ix.catchUp(ctx); err != nil {
		return err
	}
	ix.mu.RLock()
	tenants := make([]string, 0, len(ix.tenants))
	for t := range ix.tenants {
		tenants = append(tenants, t)
	}
	ix.mu.RUnlock()
	slices.Sort(tenants)
	for _, tenant := range tenants {
		after := ""
		for {
			ids, raws, more := ix.candidates(tenant, nil, after, eachBatch, func(*T) bool { return true })
			recs, err := ix.fetch(ctx, tenant, ids, raws, true)
			if err != nil {
				return err
			}
			for i, rec := range recs {
				if !rec.found {
					continue
				}
				if err := fn(tenant, ids[i], rec.v); err != nil {
					return err
				}
			}
			if !more {
				break
			}
			after = ids[len(ids)-1]
		}
	}
	return nil
}

// eachBatch is how many records Each reads per round.
const eachBatch = 256

// Views calls fn with the view of every record the index holds, of every
// tenant (tenants in no order, each tenant's records in id order), once it
// has caught up as a list does: a scan of every record for a summary
// (counts by phase) at the cost of memory reads. fn runs under the index's
// read lock: it must be quick and must not call the index.
// Errors: UNAVAILABLE (catching up failed).
func (ix *Index[T]) Views(ctx context.Context, fn func(tenant string, view *T)) error {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	if err := ix.catchUp(ctx); err != nil {
		return err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for tenant, ti := range ix.tenants {
		ti.all.Ascend(func(e *indexEntry[T]) bool {
			fn(tenant, &e.view)
			return true
		})
	}
	return nil
}

// Len is the number of records the index holds of tenant.
func (ix *Index[T]) Len(tenant string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ti := ix.tenants[tenant]; ti != nil {
		return ti.all.Len()
	}
	return 0
}
