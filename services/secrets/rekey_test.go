package secrets

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/secrets/seal"
)

func sealKey(id string, fill byte) seal.Key {
	return seal.Key{ID: id, Bytes: bytes.Repeat([]byte{fill}, seal.KeySize)}
}

// restart stops the harness's service and starts it again with keys, the
// last one current. Errors are Start's.
func (h *harness) restart(t *testing.T, keys ...seal.Key) error {
	t.Helper()
	if err := h.svc.Stop(); err != nil {
		t.Fatal(err)
	}
	kr, err := seal.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := Start(h.env.NC, h.env.Stores, h.options(kr))
	if err != nil {
		return err
	}
	t.Cleanup(func() { _ = svc.Stop() })
	h.svc = svc
	return nil
}

func (h *harness) rekey(t *testing.T, in RekeyRequest) RekeyReply {
	t.Helper()
	var out RekeyReply
	if err := h.call(t, RekeySubject, in, &out); err != nil {
		t.Fatalf("rekey: %v", err)
	}
	return out
}

// load puts new secrets (tenant acme) and deletes victims, one round (a
// put, then the delete of the next victim, if any) each time start is
// called, running alongside whatever the caller does until it waits for
// the round; every operation must succeed.
type load struct {
	h       *harness
	victims []api.Secret
	rounds  int
	created map[string]string // ref -> value
	deleted []api.Secret
}

// start runs the next round in the background; the channel yields its
// error once it is done. The caller receives from it before starting the
// next round or reading l.
func (l *load) start() <-chan error {
	done := make(chan error, 1)
	i := l.rounds
	l.rounds++
	go func() { done <- l.round(i) }()
	return done
}

func (l *load) round(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), bus.DefaultTimeout)
	defer cancel()
	value := fmt.Sprintf("rekey-load-value-%03d", i)
	var s api.Secret
	if err := bus.Call(ctx, l.h.env.NC, cmd("acme", "put"), api.SecretPutRequest{Name: "load", Value: value}, &s); err != nil {
		return err
	}
	l.created[s.Ref] = value
	if i >= len(l.victims) {
		return nil
	}
	v := l.victims[i]
	if err := bus.Call(ctx, l.h.env.NC, cmd(v.TenantID, "delete"), api.IDRequest{ID: v.ID}, nil); err != nil {
		return err
	}
	l.deleted = append(l.deleted, v)
	return nil
}

// Rekey under load: puts and deletes run while every value is re-sealed in
// small batches; afterwards the old key is removed, the service restarted,
// and every value still resolves.
func TestRekeyUnderLoad(t *testing.T) {
	h := startHarness(t) // current key k1
	seeded := map[string]string{}
	var seeds []api.Secret
	for i := range 30 {
		tenant := []string{"acme", "globex"}[i%2]
		value := fmt.Sprintf("rekey-seed-value-%02d", i)
		s := h.put(t, tenant, api.SecretPutRequest{Name: fmt.Sprintf("seed-%d", i), Value: value})
		seeded[s.Ref] = value
		seeds = append(seeds, s)
	}
	// k2 is added and made current: the last line of the key file.
	if err := h.restart(t, sealKey("k1", 1), sealKey("k2", 2)); err != nil {
		t.Fatalf("restart with k2 current: %v", err)
	}

	// Victims are acme seeds only: globex keys sort after every acme key,
	// new ones included, so the last key of the store is never deleted and
	// a batch continuing a pass always finds a record after its cursor.
	var victims []api.Secret
	for _, s := range seeds[len(seeds)/2:] {
		if s.TenantID == "acme" {
			victims = append(victims, s)
		}
	}
	l := &load{h: h, victims: victims, created: map[string]string{}}

	var total RekeyReply
	batches := 0
	for cursor := ""; ; {
		// Interleave: one load round runs alongside every batch.
		round := l.start()
		batch := h.rekey(t, RekeyRequest{Cursor: cursor, Limit: 4})
		batches++
		if err := <-round; err != nil {
			t.Fatalf("load failed during the rekey: %v", err)
		}
		if batch.KeyID != "k2" || batch.Visited == 0 || batch.Visited > 4 {
			t.Fatalf("rekey batch %+v; want up to 4 records sealed with k2", batch)
		}
		total.Merge(batch)
		if cursor = batch.NextCursor; cursor == "" {
			break
		}
	}
	deleted, created := l.deleted, l.created

	if batches < 5 {
		t.Fatalf("rekey took %d batches; the test wants several to interleave with the load", batches)
	}
	if len(total.Failed) != 0 || total.Remaining != 0 || !slices.Equal(total.Retired, []string{"k1"}) {
		t.Fatalf("rekey outcome: failed %v, remaining %d, retired %v; want none, 0, [k1]", total.Failed, total.Remaining, total.Retired)
	}
	if total.Visited != total.Resealed+total.Current+total.Vanished {
		t.Fatalf("rekey counts do not add up: %+v", total)
	}
	if total.Resealed > len(seeds) || total.Resealed+len(deleted) < len(seeds) {
		t.Fatalf("resealed %d of %d seeds with %d deleted concurrently", total.Resealed, len(seeds), len(deleted))
	}
	if len(deleted) == 0 || len(created) < batches {
		t.Fatalf("load ran %d puts and %d deletes over %d batches", len(created), len(deleted), batches)
	}

	// The old key leaves the key file; the service restarts without it.
	if err := h.restart(t, sealKey("k2", 2)); err != nil {
		t.Fatalf("restart without k1 after the rekey: %v", err)
	}
	gone := map[string]bool{}
	for _, s := range deleted {
		gone[s.Ref] = true
	}
	for ref, want := range seeded {
		tenant := strings.Split(strings.TrimPrefix(ref, "secret://"), "/")[0]
		v, err := h.resolve(t, tenant, ref)
		if gone[ref] {
			wantError(t, err, api.CodeNotFound, "")
			continue
		}
		if err != nil || v != want {
			t.Fatalf("seeded %s after the rekey: err %v, value matches %v", ref, err, v == want)
		}
	}
	for ref, want := range created {
		if v, err := h.resolve(t, "acme", ref); err != nil || v != want {
			t.Fatalf("put during the rekey %s: err %v, value matches %v", ref, err, v == want)
		}
	}

	// A replica still running with the old key file refuses to seal, and
	// the old key file no longer starts the service.
	lagging := newLocalStore(h.env.Stores.Secrets, testKeyring(t, "k1", 1))
	_, err := lagging.create(context.Background(), "acme", api.NewID(api.PrefixSecret), "n", "lagging-value")
	if ce := wantError(t, err, api.CodeInternal, "", "lagging-value"); !strings.Contains(ce.Message, "retired") {
		t.Fatalf("lagging replica: %s; want a refusal naming the retired key", ce.Message)
	}
	if err := h.restart(t, sealKey("k1", 1)); err == nil || !strings.Contains(err.Error(), "current seal key k1 was retired") {
		t.Fatalf("start with the retired key current: %v; want refused", err)
	}
}

// A batch that finds no record after its cursor (every later one deleted
// meanwhile, or a cursor past every key) ends the pass with Visited 0; it
// must still count the values left on the old key and retire nothing while
// any exists, so the old key cannot leave the key file by mistake.
func TestRekeyBatchFindingNothingRetiresNothingInUse(t *testing.T) {
	h := startHarness(t)
	acme := h.put(t, "acme", api.SecretPutRequest{Name: "a", Value: "rekey-acme-value"})
	h.put(t, "globex", api.SecretPutRequest{Name: "g", Value: "rekey-globex-value"})
	if err := h.restart(t, sealKey("k1", 1), sealKey("k2", 2)); err != nil {
		t.Fatal(err)
	}
	past := bus.RecordKey("zzz", api.PrefixSecret+strings.Repeat("z", 26)) // sorts after every tenant's keys
	out := h.rekey(t, RekeyRequest{Cursor: past})
	if out.KeyID != "k2" || out.Visited != 0 || out.NextCursor != "" || out.Remaining != 2 || len(out.Retired) != 0 {
		t.Fatalf("rekey after the last key: %+v; want k2, nothing visited, pass done, 2 remaining, nothing retired", out)
	}
	if err := h.restart(t, sealKey("k2", 2)); err == nil || !strings.Contains(err.Error(), "key k1 is not in the keyring") {
		t.Fatalf("start without k1 while values still use it: %v; want refused", err)
	}
	if err := h.restart(t, sealKey("k1", 1), sealKey("k2", 2)); err != nil {
		t.Fatal(err)
	}
	if v, err := h.resolve(t, "acme", acme.Ref); err != nil || v != "rekey-acme-value" {
		t.Fatalf("value sealed with k1 after the rekey: err %v, value matches %v", err, v == "rekey-acme-value")
	}
}

// A value that does not open keeps its key: the rekey reports it and
// retires nothing, so the old key cannot be removed by mistake.
func TestRekeyReportsValuesThatDoNotOpen(t *testing.T) {
	h := startHarness(t)
	good := h.put(t, "acme", api.SecretPutRequest{Name: "good", Value: "rekey-good-value"})
	bad := h.put(t, "acme", api.SecretPutRequest{Name: "bad", Value: "rekey-bad-value"})
	ctx := context.Background()
	secrets := newLocalStore(h.env.Stores.Secrets, nil).secrets
	if _, _, err := secrets.Mutate(ctx, "acme", bad.ID, func(rec *record) error {
		rec.Ciphertext = append([]byte(nil), rec.Ciphertext...)
		rec.Ciphertext[0] ^= 0xff
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.restart(t, sealKey("k1", 1), sealKey("k2", 2)); err != nil {
		t.Fatal(err)
	}
	out := h.rekey(t, RekeyRequest{})
	if out.Resealed != 1 || !slices.Equal(out.Failed, []string{bad.Ref}) || out.NextCursor != "" || out.Remaining != 1 || len(out.Retired) != 0 {
		t.Fatalf("rekey: %+v; want 1 resealed, %s failed, 1 remaining, nothing retired", out, bad.Ref)
	}
	if err := h.restart(t, sealKey("k2", 2)); err == nil || !strings.Contains(err.Error(), "key k1 is not in the keyring") {
		t.Fatalf("start without k1 while a value still uses it: %v; want refused", err)
	}
	if err := h.restart(t, sealKey("k1", 1), sealKey("k2", 2)); err != nil {
		t.Fatal(err)
	}
	if v, err := h.resolve(t, "acme", good.Ref); err != nil || v != "rekey-good-value" {
		t.Fatalf("resealed value: err %v", err)
	}
	if strings.Contains(h.logs.String(), "rekey-bad-value") || strings.Contains(h.logs.String(), "rekey-good-value") {
		t.Fatal("logs hold a value")
	}
}

func TestRekeyRefusesBadInput(t *testing.T) {
	h := startHarness(t)
	for _, tc := range []struct {
		name string
		body string
		path string
	}{
		{"negative limit", `{"limit":-1}`, "limit"},
		{"bad cursor", `{"cursor":"not-a-key"}`, "cursor"},
		{"unknown field", `{"all":true}`, "all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, h.call(t, RekeySubject, []byte(tc.body), nil), api.CodeInvalidInput, tc.path)
		})
	}
	// Nothing stored: a pass is done at once and retires nothing.
	if out := h.rekey(t, RekeyRequest{}); out.Visited != 0 || out.NextCursor != "" || out.Remaining != 0 || len(out.Retired) != 0 || out.KeyID != "k1" {
		t.Fatalf("rekey of an empty store: %+v", out)
	}
}
