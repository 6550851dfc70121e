// Package bustest starts an embedded nats-server for tests: loopback, a random
// port, JetStream with its store in t.TempDir(), and the buckets and streams
// of bus.OpenStores.
package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/bus"
)

// Env is a running test server with a connection and the stores.
type Env struct {
	Server *server.Server
	URL    string
	NC     *nats.Conn
	Stores *bus.Stores
}

// Start runs a server for t and stops it (and the connection) at cleanup.
func Start(t testing.TB) *Env {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("embedded nats: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	env := &Env{Server: srv, URL: srv.ClientURL()}
	env.NC = env.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if env.Stores, err = bus.OpenStores(ctx, env.NC, bus.StoreOptions{}); err != nil {
		t.Fatalf("open stores: %v", err)
	}
	return env
}

// Connect opens another connection to the server, closed at cleanup.
func (e *Env) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := bus.Connect(bus.ConnectOptions{URL: e.URL, Name: t.Name()})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}
