package main

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

func TestLookupHealthTarget(t *testing.T) {
	cases := []struct {
		name, serve, micro string
		jetstream          bool
	}{
		{"secrets", "secrets", "secrets", true},
		{"accounts", "accounts", "accounts", true},
		{"reconciler", "reconciler", "reconciler", true},
		{"provider-hetzner", "provider-hetzner", "provider-hetzner-cloud", false},
		{"provider-hetzner-cloud", "provider-hetzner", "provider-hetzner-cloud", false},
		{"provider-proxmox", "provider-proxmox", "provider-proxmox", false},
		{"my-provider", "my-provider", "my-provider", false},
	}
	for _, tc := range cases {
		serve, target := lookupHealthTarget(tc.name)
		hasJS := len(target.buckets)+len(target.streams) > 0
		if serve != tc.serve || target.micro != tc.micro || hasJS != tc.jetstream {
			t.Errorf("%s: serve %q micro %q jetstream %v, want %q %q %v", tc.name, serve, target.micro, hasJS, tc.serve, tc.micro, tc.jetstream)
		}
	}
}

// health runs `compute health ARGS` against the NATS server at url and
// returns its output or error.
func health(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	c := &cli{t: t, url: url}
	return c.run("", append([]string{"health", "--timeout", "5s"}, args...)...)
}

func wantUnhealthy(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), "unhealthy: ") || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line \"unhealthy: …%s…\"", err, want)
	}
}

func startServices(t *testing.T, env *bustest.Env, names ...string) {
	t.Helper()
	stop, err := runServices(env.NC, env.Stores, &serviceConfig{log: zerolog.Nop(), resyncInterval: -1}, names)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

func TestHealthOfStatefulService(t *testing.T) {
	env := bustest.Start(t)
	_, err := health(t, env.URL, "--service", "reconciler")
	wantUnhealthy(t, err, `no instance of service "reconciler" answers $SRV.PING.reconciler`)

	startServices(t, env, "reconciler")
	out, err := health(t, env.URL, "--service", "reconciler")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^healthy: reconciler \S+ \(id \S+\) answers ping; jetstream: compute_instances, COMPUTE_WORK\n$`)
	if !want.MatchString(out) {
		t.Fatalf("output %q, want %s", out, want)
	}
}

func TestHealthNamesMissingJetStreamAsset(t *testing.T) {
	env := bustest.Start(t)
	startServices(t, env, "accounts")
	if _, err := health(t, env.URL, "--service", "accounts"); err != nil {
		t.Fatalf("before the bucket goes: %v", err)
	}
	if err := env.Stores.JS.DeleteKeyValue(context.Background(), bus.BucketPools); err != nil {
		t.Fatal(err)
	}
	_, err := health(t, env.URL, "--service", "accounts")
	wantUnhealthy(t, err, "jetstream bucket compute_pools")
}

func TestHealthOfProviderByEitherName(t *testing.T) {
	env := bustest.Start(t)
	startServices(t, env, "provider-hetzner")
	for _, name := range []string{"provider-hetzner", "provider-hetzner-cloud"} {
		out, err := health(t, env.URL, "--service", name)
		if err != nil || !strings.HasPrefix(out, "healthy: provider-hetzner-cloud ") || strings.Contains(out, "jetstream") {
			t.Fatalf("%s: %q %v", name, out, err)
		}
	}
}

func TestHealthRefusesForeignPingReply(t *testing.T) {
	env := bustest.Start(t)
	sub, err := env.NC.Subscribe("$SRV.PING.impostor", func(m *nats.Msg) { _ = m.Respond([]byte(`{"name":"other"}`)) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_, err = health(t, env.URL, "--service", "impostor")
	wantUnhealthy(t, err, "unexpected reply")
}

func TestHealthHTTP(t *testing.T) {
	const noNATS = "nats://127.0.0.1:1" // --http never dials NATS
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	for path, healthy := range map[string]bool{"/ok": true, "/missing": true, "/down": false} {
		out, err := health(t, noNATS, "--http", srv.URL+path)
		switch {
		case healthy && (err != nil || !strings.HasPrefix(out, "healthy: GET "+srv.URL+path)):
			t.Errorf("%s: %q %v, want healthy", path, out, err)
		case !healthy:
			wantUnhealthy(t, err, "503 Service Unavailable")
		}
	}
	srv.Close()
	_, err := health(t, noNATS, "--http", srv.URL+"/ok")
	wantUnhealthy(t, err, "connection refused")

	_, err = health(t, noNATS, "--service", "reconciler", "--http", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "exactly one of --service and --http") {
		t.Fatalf("both flags: %v", err)
	}
}

func TestHealthHTTPSWithCA(t *testing.T) {
	const noNATS = "nats://127.0.0.1:1"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	_, err := health(t, noNATS, "--http", srv.URL)
	wantUnhealthy(t, err, "certificate")

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := health(t, noNATS, "--http", srv.URL, "--http-ca", caFile); err != nil {
		t.Fatalf("with --http-ca: %q %v", out, err)
	}
	_, err = health(t, noNATS, "--http", srv.URL, "--http-ca", filepath.Join(t.TempDir(), "none.pem"))
	wantUnhealthy(t, err, "none.pem")
}
