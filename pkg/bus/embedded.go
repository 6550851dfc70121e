package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configures StartEmbedded.
type EmbeddedOptions struct {
	// StoreDir holds the JetStream file store (required).
	StoreDir string
	// Host to listen on; default 127.0.0.1 (loopback only).
	Host string
	// Port to listen on; 0 picks a free random port.
	Port int
	// Name of the server (default "compute-embedded").
	Name string
	// MaxPayload bounds a message's size in bytes (0: the nats-server
	// default, 1 MiB).
	MaxPayload int32
}

// StartEmbedded starts an in-process nats-server with JetStream on
// loopback, file storage in StoreDir and fsync after every write, and waits
// until it accepts clients (10 s at most). Client URL: srv.ClientURL().
func StartEmbedded(o EmbeddedOptions) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, fmt.Errorf("embedded nats: StoreDir is required")
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	port := o.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if o.Name == "" {
		o.Name = "compute-embedded"
	}
	srv, err := server.NewServer(&server.Options{
		ServerName:             o.Name,
		Host:                   o.Host,
		Port:                   port,
		JetStream:              true,
		StoreDir:               o.StoreDir,
		SyncAlways:             true,
		NoLog:                  true,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
		MaxPayload:             o.MaxPayload,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 10s on %s:%d", o.Host, o.Port)
	}
	return srv, nil
}
