package secrets

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

var refPattern = regexp.MustCompile(`^secret://acme/sec_[0-9a-z]{26}$`)

func TestPutAnswersMetadataAndRef(t *testing.T) {
	h := startHarness(t)
	var raw json.RawMessage
	if err := h.call(t, cmd("acme", "put"), api.SecretPutRequest{Name: "hcloud.token", Value: "put-value-7f3a"}, &raw); err != nil {
		t.Fatalf("put: %v", err)
	}
	if regexp.MustCompile(`put-value-7f3a`).Match(raw) {
		t.Fatal("put reply holds the value")
	}
	var s api.Secret
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if !refPattern.MatchString(s.Ref) || s.Ref != "secret://acme/"+s.ID || s.TenantID != "acme" || s.Name != "hcloud.token" || s.CreatedAt.IsZero() {
		t.Fatalf("put answered %+v; want ref secret://acme/<id>, tenant acme, name hcloud.token, createdAt set", s)
	}
	if _, err := h.env.Stores.Secrets.Get(context.Background(), "acme."+s.ID); err != nil {
		t.Fatalf("record acme.%s not stored: %v", s.ID, err)
	}
}

func TestPutIdempotent(t *testing.T) {
	h := startHarness(t)
	req := api.SecretPutRequest{Name: "tok", Value: "idem-value-1", IdempotencyKey: "op 1/with.dots*and>wildcards"}
	first := h.put(t, "acme", req)
	again := h.put(t, "acme", req)
	if again.ID != first.ID || again.Ref != first.Ref {
		t.Fatalf("repeat put answered %s, want the first secret %s", again.ID, first.ID)
	}

	req.Value = "idem-value-2"
	err := h.call(t, cmd("acme", "put"), req, nil)
	wantError(t, err, api.CodeConflict, "idempotencyKey", "idem-value-1", "idem-value-2")

	other := h.put(t, "other", api.SecretPutRequest{Name: "tok", Value: "idem-value-1", IdempotencyKey: req.IdempotencyKey})
	if other.ID == first.ID {
		t.Fatal("another tenant's put with the same idempotency key answered the first tenant's secret")
	}

	var list api.List[api.Secret]
	if err := h.call(t, cmd("acme", "list"), api.ListRequest{}, &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %d secrets (err %v), want exactly the one of the first put", len(list.Items), err)
	}

	key := bus.RecordKey("acme", bus.IdempotencyID(idempotencyOp, req.IdempotencyKey))
	if !regexp.MustCompile(`^acme\.secrets-put\.[0-9a-f]{64}$`).MatchString(key) {
		t.Fatalf("idempotency key %q is not <tenant>.secrets-put.<hex sha256>", key)
	}
	e, err := h.env.Stores.Idempotency.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("idempotency record: %v", err)
	}
	if got, want := string(e.Value()), `{"secretId":"`+first.ID+`"}`; got != want {
		t.Fatalf("idempotency record %s, want %s (the secret id only)", got, want)
	}
}

// A crash after the reservation and before the secret leaves an idempotency
// record pointing at no secret; the retry completes it under the reserved id.
func TestPutCompletesAReservation(t *testing.T) {
	h := startHarness(t)
	reserved := api.NewID(api.PrefixSecret)
	idempotency := bus.NewTable[idempotencyRecord](h.env.Stores.Idempotency, "idempotency record")
	if _, err := idempotency.Create(context.Background(), "acme", bus.IdempotencyID(idempotencyOp, "k1"), idempotencyRecord{SecretID: reserved}); err != nil {
		t.Fatal(err)
	}
	s := h.put(t, "acme", api.SecretPutRequest{Name: "tok", Value: "reserved-value", IdempotencyKey: "k1"})
	if s.ID != reserved {
		t.Fatalf("retry made %s, want the reserved id %s", s.ID, reserved)
	}
	if v, err := h.resolve(t, "acme", s.Ref); err != nil || v != "reserved-value" {
		t.Fatalf("resolve of the completed secret: err %v, value matches %v", err, v == "reserved-value")
	}
}
