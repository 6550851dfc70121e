package natsauth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/natsauth"
)

// errAccountResourcesExceeded is nats-server's JSAccountResourcesExceededErr
// ("resource limits exceeded for account"; nats.go has no constant).
const errAccountResourcesExceeded jetstream.ErrorCode = 10002

// TestTenantJetStreamBytesLimit: a tenant's limits.jetStreamBytes is its
// NATS account's file storage (nats-server enforces it from the account
// JWT, the tenants service is not in the path). A user of acme's account
// (limit 64 KiB) storing 1 KiB messages is refused, with JetStream's
// account-resources error, once the account holds its limit; a stream
// asking for more than the limit is refused at creation; globex (1 MiB)
// stores 200 KiB beside it; a tenant without JetStream bytes has none.
func TestTenantJetStreamBytesLimit(t *testing.T) {
	dir := t.TempDir()
	a, err := natsauth.Init(dir, natsauth.InitOptions{ResolverDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir(), ConfigFile: filepath.Join(dir, natsauth.ServerConfFile)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	sys, err := a.ConnectSys(bus.ConnectOptions{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := func(id string, bytes int64) jetstream.JetStream {
		t.Helper()
		account, _ := natsauth.NewAccountKey()
		limits := api.DefaultTenantLimits
		limits.JetStreamBytes = bytes
		token, err := a.TenantAccount(api.Tenant{ID: id, Account: account, State: api.TenantActive, Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		if err := natsauth.Push(ctx, sys, token); err != nil {
			t.Fatal(err)
		}
		// a user allowed everything its account holds (JetStream included)
		creds, _, err := a.User(account, id+"/js", jwt.Permissions{})
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), id+".creds")
		if err := os.WriteFile(file, creds, 0o600); err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(srv.ClientURL(), nats.UserCredentials(file))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		j, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	const limit = 64 << 10
	acme, globex, none := js("acme", limit), js("globex", 1<<20), js("initech", 0)
	stream := func(j jetstream.JetStream, maxBytes int64) error {
		_, err := j.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage, MaxBytes: maxBytes})
		return err
	}
	if err := stream(acme, 2*limit); err == nil {
		t.Fatal("acme made a stream of twice its JetStream bytes")
	}
	if err := stream(none, -1); err == nil {
		t.Fatal("a tenant without JetStream bytes made a stream")
	}
	if err := stream(acme, -1); err != nil {
		t.Fatal(err)
	}
	if err := stream(globex, -1); err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("x", 1<<10))
	stored := 0
	var refusal error
	for range 2 * limit / len(body) {
		if _, refusal = acme.Publish(ctx, "s.x", body); refusal != nil {
			break
		}
		stored += len(body)
	}
	var apiErr *jetstream.APIError
	if refusal == nil || !errors.As(refusal, &apiErr) || apiErr.ErrorCode != errAccountResourcesExceeded || stored > limit {
		t.Fatalf("acme stored %d bytes of 1 KiB messages under a %d-byte limit; the refusal: %v (want JetStream error %d)",
			stored, limit, refusal, errAccountResourcesExceeded)
	}
	t.Logf("acme refused after %d bytes: %v (JetStream error code %d)", stored, refusal, apiErr.ErrorCode)
	for i := range 200 {
		if _, err := globex.Publish(ctx, "s.x", body); err != nil {
			t.Fatalf("globex's publish %d beside acme's full account: %v", i, err)
		}
	}
}
