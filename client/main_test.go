package client_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/accounts"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
	"better-compute.io/compute/services/reconciler"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/secrets/seal"
)

// natsURL is the embedded NATS server of the examples and tests, with the
// secrets, accounts, reconciler and Hetzner provider services on it and
// the provider on the Hetzner Cloud API emulator.
var natsURL string

func TestMain(m *testing.M) {
	stop, err := startStack()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the stack:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startStack starts what natsURL names, in a temporary directory, and
// returns the function that stops it all.
func startStack() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	dir, err := os.MkdirTemp("", "client-example-")
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { _ = os.RemoveAll(dir) })
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		return nil, err
	}
	stops = append(stops, srv.Shutdown)
	natsURL = srv.ClientURL()
	nc, err := bus.Connect(bus.ConnectOptions{URL: natsURL, Name: "client-example-services"})
	if err != nil {
		return nil, err
	}
	stops = append(stops, nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		return nil, err
	}
	emu, err := emulator.Start(emulator.Options{Logger: zerolog.Nop()}, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { _ = emu.Close() })
	kr, _, err := seal.EnsureKeyFile(filepath.Join(dir, "seal.key"))
	if err != nil {
		return nil, err
	}
	log := zerolog.Nop()
	starts := []func(*nats.Conn) (func(), error){
		func(nc *nats.Conn) (func(), error) {
			s, err := secrets.Start(nc, st, secrets.Options{Keyring: kr, Logger: log})
			return func() { _ = s.Stop() }, err
		},
		func(nc *nats.Conn) (func(), error) {
			s, err := accounts.Start(nc, st, accounts.Options{Logger: log})
			return func() { _ = s.Stop() }, err
		},
		func(nc *nats.Conn) (func(), error) {
			r, err := reconciler.Start(nc, st, reconciler.Options{Logger: log, ResyncInterval: -1})
			if err != nil {
				return nil, err
			}
			return r.Stop, nil
		},
		func(nc *nats.Conn) (func(), error) {
			s, err := provider.Serve(nc, hetzner.Definition(hetzner.WithEndpoint(emu.URL())), provider.ServeOptions{Logger: log})
			return func() { _ = s.Stop() }, err
		},
	}
	for _, start := range starts {
		s, err := start(nc)
		if err != nil {
			return nil, err
		}
		stops = append(stops, s)
	}
	return stop, nc.Flush()
}
