package bus_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

type rec struct {
	N int `json:"n"`
}

func TestTableCompareAndSet(t *testing.T) {
	env := bustest.Start(t)
	ctx, tab := testCtx(t), bus.NewTable[rec](env.Stores.Pools, "rec")

	notFound := api.NotFound("rec", "x")
	if _, _, err := tab.Get(ctx, "acme", "x"); !reflect.DeepEqual(api.AsComputeError(err), notFound) {
		t.Fatalf("Get of a missing key = %v, want %v", err, notFound)
	}
	rev1, err := tab.Create(ctx, "acme", "x", rec{N: 1})
	if err != nil || rev1 == 0 {
		t.Fatalf("Create = %d, %v", rev1, err)
	}
	_, err = tab.Create(ctx, "acme", "x", rec{N: 2})
	if want := api.Errorf(api.CodeAlreadyExists, "acme.x already exists"); !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("second Create = %v, want %v", err, want)
	}
	got, rev, err := tab.Get(ctx, "acme", "x")
	if err != nil || rev != rev1 || got.N != 1 {
		t.Fatalf("Get = %+v rev %d, %v; want n=1 rev %d", got, rev, err, rev1)
	}

	// MutateAt writes at the revision it is given, without a read.
	got, rev2, err := tab.MutateAt(ctx, "acme", "x", got, rev1, func(r *rec) error { r.N = 3; return nil })
	if err != nil || rev2 <= rev1 || got.N != 3 {
		t.Fatalf("MutateAt = %+v rev %d, %v; want n=3 after rev %d", got, rev2, err, rev1)
	}
	// From a stale revision its write loses; it reads again and applies
	// the change to the record as it is now.
	got, rev3, err := tab.MutateAt(ctx, "acme", "x", rec{N: 1}, rev1, func(r *rec) error { r.N *= 10; return nil })
	if err != nil || rev3 <= rev2 || got.N != 30 {
		t.Fatalf("stale MutateAt = %+v rev %d, %v; want n=30 after rev %d", got, rev3, err, rev2)
	}
	if got, rev, err := tab.Get(ctx, "acme", "x"); err != nil || rev != rev3 || got.N != 30 {
		t.Fatalf("after the stale MutateAt: %+v rev %d, %v; want n=30 rev %d", got, rev, err, rev3)
	}
	rev2 = rev3
	want := api.Errorf(api.CodeConflict, "acme.x changed since revision %d", rev1)

	err = tab.Delete(ctx, "acme", "x", rev1)
	if !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("stale Delete = %v, want %v", err, want)
	}
	if err := tab.Delete(ctx, "acme", "x", rev2); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, _, err := tab.Get(ctx, "acme", "x"); !reflect.DeepEqual(api.AsComputeError(err), notFound) {
		t.Fatalf("Get of a deleted key = %v, want %v", err, notFound)
	}
	if _, err := tab.Create(ctx, "acme", "x", rec{N: 5}); err != nil {
		t.Fatalf("Create after delete: %v", err)
	}
	if got, _, err := tab.Get(ctx, "acme", "x"); err != nil || got.N != 5 {
		t.Fatalf("recreated record %+v, %v", got, err)
	}
	if err := tab.Remove(ctx, "acme", "x"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := tab.Remove(ctx, "acme", "x"); !reflect.DeepEqual(api.AsComputeError(err), notFound) {
		t.Fatalf("Remove of a deleted key = %v, want %v", err, notFound)
	}
}

// Mutate applies its change to the latest record: a write that lost to
// another one (made by the change itself here, once) is tried again on a
// fresh read; an error of the change, also a CONFLICT, ends it unwritten.
func TestTableMutate(t *testing.T) {
	env := bustest.Start(t)
	ctx, tab := testCtx(t), bus.NewTable[rec](env.Stores.Pools, "rec")
	if _, err := tab.Create(ctx, "acme", "x", rec{N: 1}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	got, rev, err := tab.Mutate(ctx, "acme", "x", func(r *rec) error {
		calls++
		if calls == 1 { // another writer gets in between the read and the write
			if _, _, err := tab.Mutate(ctx, "acme", "x", func(r *rec) error { r.N = 10; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		r.N++
		return nil
	})
	if err != nil || got.N != 11 || calls != 2 {
		t.Fatalf("Mutate = %+v, %v after %d calls; want n=11 after 2", got, err, calls)
	}
	if stored, storedRev, err := tab.Get(ctx, "acme", "x"); err != nil || stored != got || storedRev != rev {
		t.Fatalf("stored %+v rev %d, %v; want %+v rev %d", stored, storedRev, err, got, rev)
	}

	refused := api.Errorf(api.CodeConflict, "version is stale") // a change's own CONFLICT is no lost race
	calls = 0
	if got, _, err := tab.Mutate(ctx, "acme", "x", func(r *rec) error { calls++; r.N = 99; return refused }); err != refused || got.N != 11 || calls != 1 {
		t.Fatalf("refused Mutate = %+v, %v after %d calls; want the record as read and %v after 1", got, err, calls, refused)
	}
	if _, _, err := tab.Mutate(ctx, "acme", "y", func(*rec) error { return nil }); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("Mutate of a missing record = %v, want NOT_FOUND", err)
	}

	calls = 0
	_, _, err = tab.Mutate(ctx, "acme", "x", func(r *rec) error {
		calls++ // every attempt loses to another writer
		if _, _, err := tab.Mutate(ctx, "acme", "x", func(r *rec) error { r.N++; return nil }); err != nil {
			t.Fatal(err)
		}
		return nil
	})
	want := api.Errorf(api.CodeConflict, "rec x kept changing (%d attempts); retry", bus.CASAttempts)
	if !reflect.DeepEqual(api.AsComputeError(err), want) || calls != bus.CASAttempts {
		t.Fatalf("Mutate losing every race = %v after %d calls, want %v after %d", err, calls, want, bus.CASAttempts)
	}
}

// GetOrCreate creates a missing record once; later calls return it.
func TestTableGetOrCreate(t *testing.T) {
	env := bustest.Start(t)
	ctx, tab := testCtx(t), bus.NewTable[rec](env.Stores.Idempotency, "rec")
	got, rev1, created, err := tab.GetOrCreate(ctx, "acme", "op.k", rec{N: 1})
	if err != nil || !created || got.N != 1 || rev1 == 0 {
		t.Fatalf("first GetOrCreate = %+v rev %d created %v, %v; want n=1 created", got, rev1, created, err)
	}
	got, rev, created, err := tab.GetOrCreate(ctx, "acme", "op.k", rec{N: 2})
	if err != nil || created || got.N != 1 || rev != rev1 {
		t.Fatalf("second GetOrCreate = %+v rev %d created %v, %v; want the first record (n=1, rev %d)", got, rev, created, err, rev1)
	}
	if stored, _, err := tab.Get(ctx, "acme", "op.k"); err != nil || stored.N != 1 {
		t.Fatalf("stored %+v, %v; want n=1", stored, err)
	}
}

func TestTableGetCorrupt(t *testing.T) {
	env := bustest.Start(t)
	ctx, kv := testCtx(t), env.Stores.Pools
	if _, err := kv.Put(ctx, "acme.bad", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	_, _, err := bus.NewTable[rec](kv, "rec").Get(ctx, "acme", "bad")
	want := api.Errorf(api.CodeInternal, "record compute_pools/acme.bad is corrupt: invalid character 'o' in literal null (expecting 'u')")
	if !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("Get = %v, want %v", err, want)
	}
}

// vanishingKV answers a key as deleted on Get although listing still finds
// it: a record deleted between List's listing and reading.
type vanishingKV struct {
	jetstream.KeyValue
	gone string
}

func (v vanishingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if key == v.gone {
		return nil, jetstream.ErrKeyNotFound
	}
	return v.KeyValue.Get(ctx, key)
}

func TestTableKeysAndList(t *testing.T) {
	env := bustest.Start(t)
	ctx, kv := testCtx(t), env.Stores.Instances
	tab := bus.NewTable[rec](kv, "rec")
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		if _, err := tab.Create(ctx, "acme", k, rec{N: i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tab.Create(ctx, "beta", "a", rec{N: 99}); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Create(ctx, "acmex", "a", rec{N: 98}); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Create(ctx, "_internal", "a", rec{N: 97}); err != nil {
		t.Fatal(err)
	}

	keys, err := tab.Keys(ctx, "acme")
	if want := []string{"acme.a", "acme.b", "acme.c", "acme.d", "acme.e"}; err != nil || !reflect.DeepEqual(keys, want) {
		t.Fatalf("Keys = %v, %v; want %v", keys, err, want)
	}
	if keys, err := tab.Keys(ctx, "nobody"); err != nil || len(keys) != 0 {
		t.Fatalf("Keys of a tenant without records = %v, %v", keys, err)
	}
	keys, err = tab.Keys(ctx, "")
	if want := []string{"acme.a", "acme.b", "acme.c", "acme.d", "acme.e", "acmex.a", "beta.a"}; err != nil || !reflect.DeepEqual(keys, want) {
		t.Fatalf("Keys of every tenant = %v, %v; want %v", keys, err, want)
	}
	var each []string
	if err := tab.Each(ctx, "", func(tenant, id string, v rec, rev uint64) error {
		each = append(each, fmt.Sprintf("%s/%s=%d", tenant, id, v.N))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"acme/a=1", "acme/b=2", "acme/c=3", "acme/d=4", "acme/e=5", "acmex/a=98", "beta/a=99"}; !reflect.DeepEqual(each, want) {
		t.Fatalf("Each of every tenant = %v, want %v", each, want)
	}

	odd := func(r *rec) bool { return r.N%2 == 1 }
	tests := []struct {
		name   string
		kv     jetstream.KeyValue
		limit  int
		cursor string
		keep   func(*rec) bool
		want   []int
		next   string
	}{
		{name: "first page", kv: kv, limit: 2, want: []int{1, 2}, next: "b"},
		{name: "second page", kv: kv, limit: 2, cursor: "b", want: []int{3, 4}, next: "d"},
		{name: "last page", kv: kv, limit: 2, cursor: "d", want: []int{5}},
		{name: "page exactly full at the end", kv: kv, limit: 5, want: []int{1, 2, 3, 4, 5}},
		{name: "default limit", kv: kv, limit: 0, want: []int{1, 2, 3, 4, 5}},
		{name: "max limit", kv: kv, limit: bus.MaxPageSize, want: []int{1, 2, 3, 4, 5}},
		{name: "cursor past the end", kv: kv, limit: 2, cursor: "z", want: []int{}},
		{name: "cursor between keys", kv: kv, limit: 2, cursor: "bb", want: []int{3, 4}, next: "d"},
		{name: "keep filter", kv: kv, limit: 2, keep: odd, want: []int{1, 3}, next: "c"},
		{name: "keep filter continued", kv: kv, limit: 2, cursor: "c", keep: odd, want: []int{5}},
		{name: "key deleted while listing", kv: vanishingKV{KeyValue: kv, gone: "acme.b"}, limit: 2, want: []int{1, 3}, next: "c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, err := bus.NewTable[rec](tc.kv, "rec").List(ctx, "acme", tc.limit, tc.cursor, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			got := []int{}
			for _, r := range page.Items {
				got = append(got, r.N)
			}
			if !reflect.DeepEqual(got, tc.want) || page.NextCursor != tc.next {
				t.Fatalf("page %v next %q, want %v next %q", got, page.NextCursor, tc.want, tc.next)
			}
		})
	}

	for _, limit := range []int{-1, bus.MaxPageSize + 1} {
		_, err := tab.List(ctx, "acme", limit, "", nil)
		want := api.InvalidInput("limit", "limit must be between 1 and 1000")
		if !reflect.DeepEqual(api.AsComputeError(err), want) {
			t.Fatalf("List limit %d = %v, want %v", limit, err, want)
		}
	}

	if err := kv.Delete(ctx, "acme.c"); err != nil {
		t.Fatal(err)
	}
	page, err := tab.List(ctx, "acme", 10, "", nil)
	if err != nil || !reflect.DeepEqual(page.Items, []rec{{1}, {2}, {4}, {5}}) || page.NextCursor != "" {
		t.Fatalf("after a delete: %+v, %v", page, err)
	}
}

func TestTableListDefaultPageSize(t *testing.T) {
	env := bustest.Start(t)
	ctx, kv := testCtx(t), env.Stores.Pools
	tab := bus.NewTable[rec](kv, "rec")
	for i := range bus.DefaultPageSize + 1 {
		if _, err := kv.Put(ctx, fmt.Sprintf("acme.k%03d", i), fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	page, err := tab.List(ctx, "acme", 0, "", nil)
	if err != nil || len(page.Items) != bus.DefaultPageSize || page.Items[99].N != 99 || page.NextCursor != "k099" {
		t.Fatalf("default page: %d items, next %q, %v", len(page.Items), page.NextCursor, err)
	}
	page, err = tab.List(ctx, "acme", 0, page.NextCursor, nil)
	if err != nil || !reflect.DeepEqual(page.Items, []rec{{100}}) || page.NextCursor != "" {
		t.Fatalf("second page: %+v, %v", page, err)
	}
}
