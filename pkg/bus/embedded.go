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
	// ConfigFile, when set, is a nats-server configuration file read first
	// (e.g. natsauth's nats-auth.conf: operator mode); the fields above
	// override what it sets.
	ConfigFile string
}

// StartEmbedded starts an in-process nats-server with JetStream on
// loopback, file storage in StoreDir and fsync after every write (and what
// ConfigFile sets), and waits
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
	opts := &server.Options{}
	if o.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(o.ConfigFile); err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
	}
	opts.ServerName, opts.Host, opts.Port = o.Name, o.Host, port
	opts.JetStream, opts.StoreDir, opts.SyncAlways = true, o.StoreDir, true
	opts.NoLog, opts.NoSigs, opts.DisableJetStreamBanner = true, true, true
	opts.MaxPayload = o.MaxPayload
	srv, err := server.NewServer(opts)
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
