package secrets

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// bucketValues returns every live value of every KV bucket on the server.
func bucketValues(t *testing.T, js jetstream.JetStream) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	names := js.KeyValueStoreNames(ctx)
	for name := range names.Name() {
		kv, err := js.KeyValue(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := kv.Keys(ctx)
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			e, err := kv.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			out[name+"/"+k] = e.Value()
		}
	}
	if err := names.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValuesNeverStoredNorLogged(t *testing.T) {
	t.Setenv(envVarName, "leak-env-value-4")
	h := startHarness(t, envStores)
	values := []string{"leak-plain-value-1", "leak-idem-value-2", "leak-conflict-value-3", "leak-env-value-4"}

	plain := h.put(t, "acme", api.SecretPutRequest{Name: "a", Value: values[0]})
	idem := api.SecretPutRequest{Name: "b", Value: values[1], IdempotencyKey: "k"}
	h.put(t, "acme", idem)
	h.put(t, "acme", idem)
	idem.Value = values[2]
	wantError(t, h.call(t, cmd("acme", "put"), idem, nil), api.CodeConflict, "idempotencyKey", values...)
	wantError(t, h.call(t, cmd("acme", "put"), []byte(`{"name":"bad name","value":"`+values[0]+`"}`), nil), api.CodeInvalidInput, "name", values...)
	wantError(t, h.call(t, cmd("acme", "put"), []byte(`{"name":"c","value":"`+values[0]+`"`), nil), api.CodeInvalidInput, "", values...)
	if _, err := h.resolve(t, "acme", plain.Ref); err != nil {
		t.Fatal(err)
	}
	if _, err := h.resolve(t, "root", "env://"+envVarName); err != nil {
		t.Fatal(err)
	}
	if err := h.call(t, bus.SecretsCheck, api.SecretResolveRequest{TenantID: "acme", Ref: plain.Ref}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := h.resolve(t, "other", plain.Ref)
	wantError(t, err, api.CodeAccessDenied, "", values...)
	if err := h.call(t, cmd("acme", "list"), api.ListRequest{}, nil); err != nil {
		t.Fatal(err)
	}

	stored := bucketValues(t, h.env.Stores.JS)
	if _, ok := stored[bus.BucketSecrets+"/acme."+plain.ID]; !ok {
		t.Fatalf("scan missed the stored secret (keys: %d)", len(stored))
	}
	for key, raw := range stored {
		for i, v := range values {
			for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v))} {
				if bytes.Contains(raw, []byte(form)) {
					t.Fatalf("KV value %s holds secret value #%d", key, i)
				}
			}
		}
	}

	logs := h.logs.String()
	for _, event := range []string{"secret stored", "secret put repeated", "secret resolved", "secret checked", "request failed"} {
		if !strings.Contains(logs, event) {
			t.Fatalf("logs lack %q: the capture does not see the service", event)
		}
	}
	for i, v := range values {
		if strings.Contains(logs, v) {
			t.Fatalf("logs hold secret value #%d", i)
		}
	}
}
