package secrets

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

const badValue = "bad-input-value-e5"

func TestBadInput(t *testing.T) {
	h := startHarness(t)
	put, list, del := cmd("acme", "put"), cmd("acme", "list"), cmd("acme", "delete")
	long := func(n int) string { return strings.Repeat("a", n) }
	v := `"value":"` + badValue + `"`
	for _, tc := range []struct {
		name, subject, body string
		code                api.Code
		path                string
	}{
		{"put malformed JSON", put, `{"name":"n",` + v, api.CodeInvalidInput, ""},
		{"put syntax error", put, `{"name":"n",` + v + `,}`, api.CodeInvalidInput, ""},
		{"put not an object", put, `["n"]`, api.CodeInvalidInput, ""},
		{"put empty body", put, ``, api.CodeInvalidInput, ""},
		{"put trailing data", put, `{"name":"n",` + v + `}{}`, api.CodeInvalidInput, ""},
		{"put missing name", put, `{` + v + `}`, api.CodeInvalidInput, "name"},
		{"put missing value", put, `{"name":"n"}`, api.CodeInvalidInput, "value"},
		{"put empty value", put, `{"name":"n","value":""}`, api.CodeInvalidInput, "value"},
		{"put value not a string", put, `{"name":"n","value":5}`, api.CodeInvalidInput, "value"},
		{"put name not a string", put, `{"name":true,` + v + `}`, api.CodeInvalidInput, "name"},
		{"put key not a string", put, `{"name":"n",` + v + `,"idempotencyKey":1}`, api.CodeInvalidInput, "idempotencyKey"},
		{"put oversized value", put, `{"name":"n","value":"` + long(MaxValueBytes+1) + `"}`, api.CodeInvalidInput, "value"},
		{"put name with space", put, `{"name":"a b",` + v + `}`, api.CodeInvalidInput, "name"},
		{"put name with slash", put, `{"name":"a/b",` + v + `}`, api.CodeInvalidInput, "name"},
		{"put name too long", put, `{"name":"` + long(MaxNameLength+1) + `",` + v + `}`, api.CodeInvalidInput, "name"},
		{"put key too long", put, `{"name":"n",` + v + `,"idempotencyKey":"` + long(MaxIdempotencyKeyLength+1) + `"}`, api.CodeInvalidInput, "idempotencyKey"},
		{"put unknown field", put, `{"name":"n",` + v + `,"secret":"x"}`, api.CodeInvalidInput, "secret"},
		{"put tenant mismatch", put, `{"tenantId":"other","name":"n",` + v + `}`, api.CodeAccessDenied, "tenantId"},
		{"put invalid subject tenant", cmd("Acme", "put"), `{"name":"n",` + v + `}`, api.CodeInvalidInput, "subject"},
		{"list negative limit", list, `{"limit":-1}`, api.CodeInvalidInput, "limit"},
		{"list limit too large", list, `{"limit":1001}`, api.CodeInvalidInput, "limit"},
		{"list limit not a number", list, `{"limit":"10"}`, api.CodeInvalidInput, "limit"},
		{"list tenant mismatch", list, `{"tenantId":"other"}`, api.CodeAccessDenied, "tenantId"},
		{"delete missing id", del, `{}`, api.CodeInvalidInput, "id"},
		{"delete malformed id", del, `{"id":"sec_1"}`, api.CodeInvalidInput, "id"},
		{"delete id of another kind", del, `{"id":"pool_01jd0000000000000000000000"}`, api.CodeInvalidInput, "id"},
		{"delete id not a string", del, `{"id":7}`, api.CodeInvalidInput, "id"},
		{"delete absent", del, `{"id":"sec_01jd0000000000000000000000"}`, api.CodeNotFound, ""},
		{"delete tenant mismatch", del, `{"tenantId":"other","id":"sec_01jd0000000000000000000000"}`, api.CodeAccessDenied, "tenantId"},
		{"resolve missing tenant", bus.SecretsResolve, `{"ref":"env://X"}`, api.CodeInvalidInput, "tenantId"},
		{"resolve invalid tenant", bus.SecretsResolve, `{"tenantId":"A.B","ref":"env://X"}`, api.CodeInvalidInput, "tenantId"},
		{"resolve missing ref", bus.SecretsResolve, `{"tenantId":"acme"}`, api.CodeInvalidInput, "ref"},
		{"resolve ref not a string", bus.SecretsResolve, `{"tenantId":"acme","ref":{}}`, api.CodeInvalidInput, "ref"},
		{"resolve plain value as ref", bus.SecretsResolve, `{"tenantId":"acme","ref":"` + badValue + `"}`, api.CodeInvalidInput, "ref"},
		{"resolve unknown field", bus.SecretsResolve, `{"tenantId":"acme","ref":"env://X","value":"x"}`, api.CodeInvalidInput, "value"},
		{"check missing ref", bus.SecretsCheck, `{"tenantId":"acme"}`, api.CodeInvalidInput, "ref"},
		{"check malformed JSON", bus.SecretsCheck, `{"tenantId":`, api.CodeInvalidInput, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, h.call(t, tc.subject, []byte(tc.body), nil), tc.code, tc.path, badValue)
		})
	}
	for _, kv := range []jetstream.KeyValue{h.env.Stores.Secrets, h.env.Stores.Idempotency} {
		keys, err := kv.Keys(context.Background())
		if !errors.Is(err, jetstream.ErrNoKeysFound) {
			t.Fatalf("bucket %s holds %d keys after bad input (err %v), want none", kv.Bucket(), len(keys), err)
		}
	}
}

func TestPutLimitsAccepted(t *testing.T) {
	h := startHarness(t)
	s := h.put(t, "acme", api.SecretPutRequest{
		TenantID:       "acme",
		Name:           strings.Repeat("n", MaxNameLength-5) + "._-A9",
		Value:          strings.Repeat("v", MaxValueBytes),
		IdempotencyKey: strings.Repeat("ü", MaxIdempotencyKeyLength),
	})
	v, err := h.resolve(t, "acme", s.Ref)
	if err != nil || len(v) != MaxValueBytes {
		t.Fatalf("resolve of a maximal value: %d bytes (err %v), want %d", len(v), err, MaxValueBytes)
	}
}
