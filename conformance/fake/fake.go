// Package fake starts credential-free conformance subjects in-process: an
// embedded NATS server (JetStream in a temporary directory), the secrets
// service holding a generated API token, the provider's emulator, and the
// provider service pointed at it, with the conformance hooks (Faults,
// Inventory, Service) wired to the emulator and the service.
//
// Each provider is one entry of a small registry of setups (see setups);
// adding a provider (proxmox) is one function returning its backend.
package fake

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/secrets/seal"
)

// Tenant is the tenant of the fake account.
const Tenant = "root"

// backend is what one provider's setup contributes: its definition
// (pointed at its emulator), the profiles its hooks can drive, an offer
// and image create accepts, the account config around the token
// reference, the hooks, and how to stop the emulator.
type backend struct {
	def       *provider.Defined
	profiles  []string
	offerID   string
	image     string
	config    func(tokenRef string) map[string]any
	faults    conformance.Faults
	inventory conformance.Inventory
	close     func()
}

// setup starts a provider's emulator accepting token, listening on addr
// (host:port; port 0 picks one; ignored by a provider without an HTTP
// API), and returns its backend; log receives the emulator's lines.
type setup func(token, addr string, log zerolog.Logger) (*backend, error)

// setups are the providers fake can start, by provider id.
var setups = map[string]setup{
	"memory":        memoryBackend,
	"hetzner-cloud": hetznerBackend,
}

// Providers lists the provider ids Start supports, sorted.
func Providers() []string {
	ids := make([]string, 0, len(setups))
	for id := range setups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Options configures Start. The zero value is usable.
type Options struct {
	// Wrap, when set, wraps every client the provider builds (tests break
	// a provider this way). The wrapper must implement the optional
	// interfaces of the provider's claimed capabilities.
	Wrap func(provider.Client) provider.Client
	// LogTo also receives every log line (JSON) of the services and the
	// emulator; they are always captured for Subject.Logs.
	LogTo io.Writer
	// MaxPayload is the embedded server's max message size in bytes (0:
	// the NATS default, 1 MiB). A smaller one lets tests cross it, in
	// transport.list-paging, with a smaller inventory.
	MaxPayload int32
	// Port is the loopback port the provider's emulator (the endpoint
	// under test) listens on (0: any free one). The memory provider has
	// no endpoint and ignores it.
	Port int
}

// Env is a started fake: the subject to certify (claiming every profile
// the fake can drive, with every hook set) and what runs behind it.
// Close stops everything.
type Env struct {
	Subject conformance.Subject
	// NATSURL is the embedded server's client URL.
	NATSURL string
	closers []func()
}

// Close stops the provider, the emulator, the secrets service and NATS,
// and removes the temporary directory.
func (e *Env) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// Start starts the fake of providerID. Errors: an unknown provider id
// (naming the supported ones), or a part failing to start.
func Start(ctx context.Context, providerID string, o Options) (env *Env, err error) {
	start, ok := setups[providerID]
	if !ok {
		return nil, fmt.Errorf("no fake setup for provider %q (have %s)", providerID, strings.Join(Providers(), ", "))
	}
	env = &Env{}
	defer func() {
		if err != nil {
			env.Close()
		}
	}()
	logs := &bustest.LogBuffer{}
	var out io.Writer = logs
	if o.LogTo != nil {
		out = io.MultiWriter(logs, o.LogTo)
	}
	log := zerolog.New(out).Level(zerolog.DebugLevel).With().Timestamp().Str("fake", providerID).Logger()

	dir, err := os.MkdirTemp("", "compute-certify-")
	if err != nil {
		return nil, err
	}
	env.closers = append(env.closers, func() { _ = os.RemoveAll(dir) })
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: filepath.Join(dir, "jetstream"), MaxPayload: o.MaxPayload})
	if err != nil {
		return nil, err
	}
	env.NATSURL = srv.ClientURL()
	env.closers = append(env.closers, func() { srv.Shutdown(); srv.WaitForShutdown() })
	token := "cf-token-" + rand.Text()
	ref, err := env.startSecrets(ctx, dir, token, log)
	if err != nil {
		return nil, err
	}
	be, err := start(token, net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)), log)
	if err != nil {
		return nil, fmt.Errorf("start the %s emulator: %w", providerID, err)
	}
	env.closers = append(env.closers, be.close)
	svc := &service{url: env.NATSURL, def: wrapped(be.def, o.Wrap), log: log}
	if err := svc.Restart(ctx); err != nil {
		return nil, err
	}
	env.closers = append(env.closers, svc.stop)
	nc, err := env.connect("conformance")
	if err != nil {
		return nil, err
	}
	env.Subject = conformance.Subject{
		ProviderID: be.def.ID(), NC: nc,
		Account: api.ProviderAccount{ID: api.NewID(api.PrefixAccount), TenantID: Tenant, Version: 1, Config: be.config(ref)},
		OfferID: be.offerID, Image: be.image, Profiles: slices.Clone(be.profiles),
		PowerObservable: true, SecretValues: []string{token}, Logs: func() []byte { return []byte(logs.String()) },
		Faults: be.faults, Inventory: be.inventory, Service: svc,
	}
	return env, nil
}

// connect opens a connection to the embedded server, closed by Close.
func (e *Env) connect(name string) (*nats.Conn, error) {
	nc, err := bus.Connect(bus.ConnectOptions{URL: e.NATSURL, Name: name})
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, nc.Close)
	return nc, nil
}

// startSecrets starts the secrets service (seal key in dir) and stores
// token, returning its secret:// reference.
func (e *Env) startSecrets(ctx context.Context, dir, token string, log zerolog.Logger) (string, error) {
	nc, err := e.connect("secrets")
	if err != nil {
		return "", err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stores, err := bus.OpenStores(sctx, nc, bus.StoreOptions{})
	if err != nil {
		return "", err
	}
	kr, _, err := seal.EnsureKeyFile(filepath.Join(dir, "seal.key"))
	if err != nil {
		return "", err
	}
	svc, err := secrets.Start(nc, stores, secrets.Options{Keyring: kr, Logger: log})
	if err != nil {
		return "", err
	}
	e.closers = append(e.closers, func() { _ = svc.Stop() })
	var sec api.Secret
	put := api.SecretPutRequest{Name: "conformance-token", Value: token}
	if err := bus.Call(sctx, nc, bus.Command(Tenant, bus.ResourceSecrets, "put"), put, &sec); err != nil {
		return "", fmt.Errorf("store the fake API token: %w", err)
	}
	return sec.Ref, nil
}

// wrapped is def whose clients wrap wraps (def itself when wrap is nil).
func wrapped(def *provider.Defined, wrap func(provider.Client) provider.Client) *provider.Defined {
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
