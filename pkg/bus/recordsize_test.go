package bus_test

import (
	"encoding/json"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

type blobRec struct {
	ID   string `json:"id"`
	Spec struct {
		Note string `json:"note"`
		Blob string `json:"blob"`
	} `json:"spec"`
}

func blob(id string, n int, ch string) blobRec {
	var r blobRec
	r.ID = id
	r.Spec.Note = "small"
	r.Spec.Blob = strings.Repeat(ch, n)
	return r
}

// A record is measured as encoded: 50,000 '<' are 300,000 bytes of JSON
// ("\u003c"), over MaxRecordBytes, and refused naming the field to shrink;
// neither a create nor an update reaches the store.
func TestTableRefusesRecordsOverMaxRecordBytes(t *testing.T) {
	env := bustest.Start(t)
	ctx, tab := testCtx(t), bus.NewTable[blobRec](env.Stores.Pools, "rec")

	_, err := tab.Create(ctx, "acme", "big", blob("big", 50_000, "<"))
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "spec.blob" {
		t.Fatalf("Create of a 300,000-byte record = %v, want INVALID_INPUT path spec.blob", err)
	}
	if _, _, err := tab.Get(ctx, "acme", "big"); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("refused record was stored: Get = %v", err)
	}
	if _, err := tab.Create(ctx, "acme", "x", blob("x", 10, "<")); err != nil {
		t.Fatal(err)
	}
	_, _, err = tab.Mutate(ctx, "acme", "x", func(r *blobRec) error { r.Spec.Blob = strings.Repeat("<", 50_000); return nil })
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "spec.blob" {
		t.Fatalf("Mutate to a 300,000-byte record = %v, want INVALID_INPUT path spec.blob", err)
	}
	if got, _, err := tab.Get(ctx, "acme", "x"); err != nil || len(got.Spec.Blob) != 10 {
		t.Fatalf("refused update was stored: %d bytes of blob, %v", len(got.Spec.Blob), err)
	}
}

// A record stored over the limit before it existed can still be changed
// (a delete or power request, a status) but not grown further.
func TestTableUpdatesLegacyOversizeRecords(t *testing.T) {
	env := bustest.Start(t)
	ctx, tab := testCtx(t), bus.NewTable[blobRec](env.Stores.Pools, "rec")
	data, err := json.Marshal(blob("old", 50_000, "<"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Stores.Pools.Put(ctx, bus.RecordKey("acme", "old"), data); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tab.Mutate(ctx, "acme", "old", func(r *blobRec) error { r.Spec.Note = "deleting"; return nil }); err != nil {
		t.Fatalf("small change to a legacy %d-byte record = %v, want it written", len(data), err)
	}
	_, _, err = tab.Mutate(ctx, "acme", "old", func(r *blobRec) error { r.Spec.Blob += strings.Repeat("<", 2_000); return nil })
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "spec.blob" {
		t.Fatalf("growing a legacy record by 12,000 bytes = %v, want INVALID_INPUT path spec.blob", err)
	}
}

// A page ends before the record that would take it past MaxPageBytes: five
// records of about 200,000 bytes make pages of 2, 2 and 1, whatever the
// limit asked.
func TestListPagesByEncodedSize(t *testing.T) {
	env := bustest.Start(t)
	ctx, tab := testCtx(t), bus.NewTable[blobRec](env.Stores.Pools, "rec")
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		if _, err := tab.Create(ctx, "acme", id, blob(id, 200_000, "x")); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	var seen []string
	cursor := ""
	for range ids {
		page, err := tab.List(ctx, "acme", bus.MaxPageSize, cursor, nil)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page.Items))
		for _, r := range page.Items {
			seen = append(seen, r.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if got, want := strings.Join(seen, ","), strings.Join(ids, ","); got != want || len(sizes) != 3 || sizes[0] != 2 || sizes[1] != 2 || sizes[2] != 1 {
		t.Fatalf("pages of %v holding %s, want pages of [2 2 1] holding %s", sizes, got, want)
	}
}
