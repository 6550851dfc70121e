// Package harness starts what a certification run needs in-process
// around a provider: an embedded NATS server (JetStream in a temporary
// directory), the secrets service, the provider service on a connection
// of its own (the conformance Service hook: killed, restarted,
// reconnected), and one buffer of every log line, for the secrets lane.
//
// conformance/fake puts a provider's emulator behind it;
// conformance/live puts the real API (through the certifier's HTTP fault
// layer) behind it.
package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/secrets/seal"
)

// Tenant is the tenant of the harness's account and secrets.
const Tenant = "root"

// Options configures Start. The zero value is usable.
type Options struct {
	// Name tags every log line ("subject": <Name>, the provider id).
	Name string
	// LogTo also receives every log line (JSON); they are always captured
	// for Logs.
	LogTo io.Writer
	// MaxPayload is the embedded server's max message size in bytes (0:
	// the NATS default, 1 MiB).
	MaxPayload int32
	// EnvSecrets makes env:// references of tenant Tenant resolve from
	// this process's environment (live accounts); secret:// always
	// resolves.
	EnvSecrets bool
}

// Harness is a started harness. Close stops everything it started.
type Harness struct {
	// NATSURL is the embedded server's client URL.
	NATSURL string
	// Log is the logger of the services (and of whatever the caller
	// starts), captured for Logs.
	Log     zerolog.Logger
	logs    *bustest.LogBuffer
	dir     string
	closers []func()
}

// Start starts NATS and the secrets service. Errors: a part failing to
// start (the parts started are stopped again).
func Start(ctx context.Context, o Options) (h *Harness, err error) {
	h = &Harness{logs: &bustest.LogBuffer{}}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	var out io.Writer = h.logs
	if o.LogTo != nil {
		out = io.MultiWriter(h.logs, o.LogTo)
	}
	h.Log = zerolog.New(out).Level(zerolog.DebugLevel).With().Timestamp().Str("subject", o.Name).Logger()
	if h.dir, err = os.MkdirTemp("", "compute-certify-"); err != nil {
		return nil, err
	}
	h.OnClose(func() { _ = os.RemoveAll(h.dir) })
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: filepath.Join(h.dir, "jetstream"), MaxPayload: o.MaxPayload})
	if err != nil {
		return nil, err
	}
	h.NATSURL = srv.ClientURL()
	h.OnClose(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if err := h.startSecrets(ctx, o.EnvSecrets); err != nil {
		return nil, err
	}
	return h, nil
}

// OnClose adds f to what Close runs (last added, first run).
func (h *Harness) OnClose(f func()) { h.closers = append(h.closers, f) }

// Close stops everything started, in reverse order, and removes the
// temporary directory.
func (h *Harness) Close() {
	for i := len(h.closers) - 1; i >= 0; i-- {
		h.closers[i]()
	}
	h.closers = nil
}

// Logs returns every log line written so far.
func (h *Harness) Logs() []byte { return []byte(h.logs.String()) }

// Connect opens a connection to the embedded server, closed by Close.
func (h *Harness) Connect(name string) (*nats.Conn, error) {
	nc, err := bus.Connect(bus.ConnectOptions{URL: h.NATSURL, Name: name})
	if err != nil {
		return nil, err
	}
	h.OnClose(nc.Close)
	return nc, nil
}

// Serve starts the provider service of def on a connection of its own
// and returns it as the conformance Service hook (stopped by Close).
// Errors: connecting or serving failed.
func (h *Harness) Serve(ctx context.Context, def *provider.Defined) (*Service, error) {
	svc := &Service{url: h.NATSURL, def: def, log: h.Log}
	if err := svc.Restart(ctx); err != nil {
		return nil, err
	}
	h.OnClose(svc.stop)
	return svc, nil
}

// startSecrets starts the secrets service, its seal key in the temporary
// directory; with env, env:// references of Tenant resolve too.
func (h *Harness) startSecrets(ctx context.Context, env bool) error {
	nc, err := h.Connect("secrets")
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stores, err := bus.OpenStores(sctx, nc, bus.StoreOptions{})
	if err != nil {
		return err
	}
	kr, _, err := seal.EnsureKeyFile(filepath.Join(h.dir, "seal.key"))
	if err != nil {
		return err
	}
	o := secrets.Options{Keyring: kr, Logger: h.Log}
	if env {
		// This process is the operator's certifier, in their own shell:
		// the config names the variable it holds (env://HCLOUD_TOKEN).
		o.Stores = []secrets.StoreConfig{{Scheme: api.SchemeSecret}, {Scheme: api.SchemeEnv, Tenants: []string{Tenant}}}
		o.EnvPrefixes = []string{""}
	}
	svc, err := secrets.Start(nc, stores, o)
	if err != nil {
		return err
	}
	h.OnClose(func() { _ = svc.Stop() })
	return nil
}

// PutSecret stores value as secret name of Tenant and returns its
// secret:// reference. Errors: the secrets service's.
func (h *Harness) PutSecret(ctx context.Context, name, value string) (string, error) {
	nc, err := h.Connect("put-secret")
	if err != nil {
		return "", err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var sec api.Secret
	put := api.SecretPutRequest{Name: name, Value: value}
	if err := bus.Call(sctx, nc, bus.Command(Tenant, bus.ResourceSecrets, "put"), put, &sec); err != nil {
		return "", fmt.Errorf("store secret %s: %w", name, err)
	}
	return sec.Ref, nil
}

// Wrapped is def whose clients wrap wraps (def itself when wrap is nil):
// tests break a provider this way. The wrapper must implement the
// optional interfaces of the provider's claimed capabilities.
func Wrapped(def *provider.Defined, wrap func(provider.Client) provider.Client) *provider.Defined {
	if wrap == nil {
		return def
	}
	d := def.Definition()
	d.New = func(bc provider.BuildContext) (provider.Client, error) {
		c, err := def.New(bc)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
	return provider.MustDefine(d)
}
