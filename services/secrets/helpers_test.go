package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/services/secrets/seal"
)

// harness is a bus with a running secrets service whose logs (debug level
// and up) go to logs.
type harness struct {
	env  *bustest.Env
	svc  *bus.Service
	logs *bustest.LogBuffer
}

func testKeyring(t testing.TB, id string, fill byte) *seal.Keyring {
	t.Helper()
	kr, err := seal.NewKeyring(seal.Key{ID: id, Bytes: bytes.Repeat([]byte{fill}, seal.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func (h *harness) options(kr *seal.Keyring) Options {
	return Options{Keyring: kr, Logger: zerolog.New(h.logs).Level(zerolog.DebugLevel), Workers: 4}
}

// startHarness starts a bus and the service with keyring k1, options
// changed by each of opts.
func startHarness(t testing.TB, opts ...func(*Options)) *harness {
	t.Helper()
	h := &harness{env: bustest.Start(t), logs: &bustest.LogBuffer{}}
	o := h.options(testKeyring(t, "k1", 1))
	for _, opt := range opts {
		opt(&o)
	}
	svc, err := Start(h.env.NC, h.env.Stores, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	h.svc = svc
	return h
}

// call sends in (a value, or raw []byte) on subject and decodes into out.
func (h *harness) call(t *testing.T, subject string, in, out any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bus.Call(ctx, h.env.NC, subject, in, out)
}

func cmd(tenant, verb string) string { return bus.Command(tenant, bus.ResourceSecrets, verb) }

func (h *harness) put(t *testing.T, tenant string, in api.SecretPutRequest) api.Secret {
	t.Helper()
	var out api.Secret
	if err := h.call(t, cmd(tenant, "put"), in, &out); err != nil {
		t.Fatalf("put: %v", err)
	}
	return out
}

func (h *harness) resolve(t *testing.T, tenant, ref string) (string, error) {
	t.Helper()
	var out api.SecretResolveReply
	err := h.call(t, bus.SecretsResolve, api.SecretResolveRequest{TenantID: tenant, Ref: ref}, &out)
	return out.Value, err
}

// wantError checks err's code and details.path exactly and that its text
// contains none of the secret values.
func wantError(t *testing.T, err error, code api.Code, path string, values ...string) *api.ComputeError {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s (path %q)", code, path)
	}
	ce := api.AsComputeError(err)
	raw, _ := json.Marshal(ce)
	for _, v := range values {
		if bytes.Contains(raw, []byte(v)) {
			t.Fatalf("%s error quotes a secret value", ce.Code)
		}
	}
	if ce.Code != code || ce.Path() != path {
		t.Fatalf("error %s (path %q): %s; want %s (path %q)", ce.Code, ce.Path(), ce.Message, code, path)
	}
	return ce
}
