package bus_test

import (
	"context"
	"errors"
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

func TestKVCompareAndSet(t *testing.T) {
	env := bustest.Start(t)
	ctx, kv := testCtx(t), env.Stores.Pools

	var got rec
	if _, err := bus.GetJSON(ctx, kv, "acme.x", &got); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("GetJSON of a missing key = %v, want ErrNotFound", err)
	}
	rev1, err := bus.CreateJSON(ctx, kv, "acme.x", rec{N: 1})
	if err != nil || rev1 == 0 {
		t.Fatalf("CreateJSON = %d, %v", rev1, err)
	}
	_, err = bus.CreateJSON(ctx, kv, "acme.x", rec{N: 2})
	if want := api.Errorf(api.CodeAlreadyExists, "acme.x already exists"); !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("second CreateJSON = %v, want %v", err, want)
	}
	rev, err := bus.GetJSON(ctx, kv, "acme.x", &got)
	if err != nil || rev != rev1 || got.N != 1 {
		t.Fatalf("GetJSON = %+v rev %d, %v; want n=1 rev %d", got, rev, err, rev1)
	}

	rev2, err := bus.UpdateJSON(ctx, kv, "acme.x", rec{N: 3}, rev1)
	if err != nil || rev2 <= rev1 {
		t.Fatalf("UpdateJSON = %d, %v", rev2, err)
	}
	_, err = bus.UpdateJSON(ctx, kv, "acme.x", rec{N: 4}, rev1)
	want := api.Errorf(api.CodeConflict, "acme.x changed since revision %d", rev1)
	if !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("stale UpdateJSON = %v, want %v", err, want)
	}
	if rev, err := bus.GetJSON(ctx, kv, "acme.x", &got); err != nil || rev != rev2 || got.N != 3 {
		t.Fatalf("after a refused update: %+v rev %d, %v; want n=3 rev %d", got, rev, err, rev2)
	}

	err = bus.DeleteKey(ctx, kv, "acme.x", rev1)
	if !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("stale DeleteKey = %v, want %v", err, want)
	}
	if err := bus.DeleteKey(ctx, kv, "acme.x", rev2); err != nil {
		t.Fatalf("DeleteKey: %v", err)
	}
	if _, err := bus.GetJSON(ctx, kv, "acme.x", &got); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("GetJSON of a deleted key = %v, want ErrNotFound", err)
	}
	if _, err := bus.CreateJSON(ctx, kv, "acme.x", rec{N: 5}); err != nil {
		t.Fatalf("CreateJSON after delete: %v", err)
	}
	if _, err := bus.GetJSON(ctx, kv, "acme.x", &got); err != nil || got.N != 5 {
		t.Fatalf("recreated record %+v, %v", got, err)
	}
}

func TestGetJSONCorrupt(t *testing.T) {
	env := bustest.Start(t)
	ctx, kv := testCtx(t), env.Stores.Pools
	if _, err := kv.Put(ctx, "acme.bad", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	var got rec
	_, err := bus.GetJSON(ctx, kv, "acme.bad", &got)
	want := api.Errorf(api.CodeInternal, "record compute_pools/acme.bad is corrupt: invalid character 'o' in literal null (expecting 'u')")
	if !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("GetJSON = %v, want %v", err, want)
	}
}

// vanishingKV answers a key as deleted on Get although listing still finds
// it: a record deleted between ListJSON's listing and reading.
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

func TestKeysAndListJSON(t *testing.T) {
	env := bustest.Start(t)
	ctx, kv := testCtx(t), env.Stores.Instances
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		if _, err := bus.CreateJSON(ctx, kv, "acme."+k, rec{N: i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bus.CreateJSON(ctx, kv, "beta.a", rec{N: 99}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.CreateJSON(ctx, kv, "acmex.a", rec{N: 98}); err != nil {
		t.Fatal(err)
	}

	keys, err := bus.Keys(ctx, kv, "acme.")
	if want := []string{"acme.a", "acme.b", "acme.c", "acme.d", "acme.e"}; err != nil || !reflect.DeepEqual(keys, want) {
		t.Fatalf("Keys = %v, %v; want %v", keys, err, want)
	}
	if keys, err := bus.Keys(ctx, kv, "nobody."); err != nil || len(keys) != 0 {
		t.Fatalf("Keys of an empty prefix = %v, %v", keys, err)
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
			page, err := bus.ListJSON(ctx, tc.kv, "acme.", tc.limit, tc.cursor, tc.keep)
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
		_, err := bus.ListJSON[rec](ctx, kv, "acme.", limit, "", nil)
		want := api.InvalidInput("limit", "limit must be between 1 and 1000")
		if !reflect.DeepEqual(api.AsComputeError(err), want) {
			t.Fatalf("ListJSON limit %d = %v, want %v", limit, err, want)
		}
	}

	if err := kv.Delete(ctx, "acme.c"); err != nil {
		t.Fatal(err)
	}
	page, err := bus.ListJSON[rec](ctx, kv, "acme.", 10, "", nil)
	if err != nil || !reflect.DeepEqual(page.Items, []rec{{1}, {2}, {4}, {5}}) || page.NextCursor != "" {
		t.Fatalf("after a delete: %+v, %v", page, err)
	}
}

func TestListJSONDefaultPageSize(t *testing.T) {
	env := bustest.Start(t)
	ctx, kv := testCtx(t), env.Stores.Pools
	for i := range bus.DefaultPageSize + 1 {
		if _, err := kv.Put(ctx, fmt.Sprintf("acme.k%03d", i), fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	page, err := bus.ListJSON[rec](ctx, kv, "acme.", 0, "", nil)
	if err != nil || len(page.Items) != bus.DefaultPageSize || page.Items[99].N != 99 || page.NextCursor != "k099" {
		t.Fatalf("default page: %d items, next %q, %v", len(page.Items), page.NextCursor, err)
	}
	page, err = bus.ListJSON[rec](ctx, kv, "acme.", 0, page.NextCursor, nil)
	if err != nil || !reflect.DeepEqual(page.Items, []rec{{100}}) || page.NextCursor != "" {
		t.Fatalf("second page: %+v, %v", page, err)
	}
}
