package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/metrics"
	"better-compute.io/compute/pkg/natsauth"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/egress"
	"better-compute.io/compute/services/accounts"
	"better-compute.io/compute/services/poolctl"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	robot "better-compute.io/compute/services/provider-hetzner-robot"
	proxmox "better-compute.io/compute/services/provider-proxmox"
	"better-compute.io/compute/services/reconciler"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/secrets/seal"
	"better-compute.io/compute/services/tenants"
)

// serviceConfig is what the service starters read: flags of `compute up`
// and `compute serve`.
type serviceConfig struct {
	sealKeyFile     string
	secretStores    []string              // --secret-store values
	stores          []secrets.StoreConfig // parsed from secretStores by parseSecretStores
	envPrefixes     []string              // --env-secret-prefix: names env:// may resolve (secrets.Options.EnvPrefixes)
	vaultAddr       string
	vaultTokenFile  string
	hetznerEndpoint string
	robotEndpoint   string // --robot-endpoint: the Robot webservice of provider-hetzner-robot
	snippetsDir     string
	snippetsStorage string
	proxmoxAllowed  string
	proxmoxEgress   *egress.Policy // parsed from proxmoxAllowed by parseEgress
	resyncInterval  time.Duration
	acceptStoreLoss bool // --accept-store-loss: serve a store that went backwards (bus.Guard)
	allowUnsynced   bool // --allow-unsynced-store: serve on a server that does not fsync every write
	// metricsAddr is --metrics-addr: where Prometheus scrapes this process ("" or "0": nowhere).
	metricsAddr string
	log         zerolog.Logger

	// authDir (--auth-dir) is the tenants service's authority directory (natsauth.Load).
	authDir string
	// conn is how the services reached NATS: tenants dials its SYS connection alike.
	conn bus.ConnectOptions
}

// guarded lists the buckets each stateful service owns: their high-water
// marks (bus.Guard) are checked before it starts and raised while it runs.
var guarded = map[string][]string{
	"secrets":    {bus.BucketSecrets},
	"accounts":   {bus.BucketAccounts, bus.BucketPools},
	"reconciler": {bus.BucketInstances},
	"tenants":    {bus.BucketTenants},
	"poolctl":    {bus.BucketPoolControl},
}

// markInterval is how often a running service raises its buckets' marks:
// a store that loses the writes of the last interval goes unnoticed.
const markInterval = 10 * time.Second

// guard checks the marks of service's buckets (none for a provider) and
// keeps raising them until the returned stop is called, which records them
// once more. Errors: bus.Guard.Check's (INVALID_STATE: the store went
// backwards and --accept-store-loss is not set).
func (c *serviceConfig) guard(st *bus.Stores, service string) (stop func(), err error) {
	buckets, ok := guarded[service]
	if !ok {
		return func() {}, nil
	}
	g := bus.NewGuard(st, buckets...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lost, err := g.Check(ctx, c.acceptStoreLoss)
	if err != nil {
		return nil, err
	}
	for _, l := range lost {
		c.log.Warn().Str("service", service).Str("loss", l).Msg("store went backwards; serving what is left (--accept-store-loss)")
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	record := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Record(ctx); err != nil {
			c.log.Warn().Err(err).Str("service", service).Msg("high-water mark not recorded")
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(markInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				record()
				return
			case <-t.C:
				record()
			}
		}
	}()
	return func() { close(done); <-finished }, nil
}

// checkSync refuses a NATS server that does not fsync every write (unless
// --allow-unsynced-store) and warns when it cannot tell (bus.CheckSync).
func (c *serviceConfig) checkSync(nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := bus.CheckSync(ctx, nc)
	switch {
	case errors.Is(err, bus.ErrSyncUnknown):
		c.log.Warn().Err(err).Msg("durability unchecked: make sure nats-server has sync_interval: always (deploy/nats.conf sets it)")
		return nil
	case err != nil && c.allowUnsynced:
		c.log.Warn().Err(err).Msg("serving without fsync of every write (--allow-unsynced-store)")
		return nil
	}
	return err
}

// parseEgress reads --proxmox-allowed-networks before anything starts, so
// a bad value stops the command with an error naming the flag.
func (c *serviceConfig) parseEgress() error {
	if c.proxmoxAllowed == "" {
		return nil
	}
	policy, err := egress.Parse(c.proxmoxAllowed)
	if err != nil {
		return fmt.Errorf("--proxmox-allowed-networks: %w", err)
	}
	c.proxmoxEgress = &policy
	return nil
}

// parseSecretStores reads --secret-store before anything starts, so a bad
// value stops the command with INVALID_CONFIG naming the flag.
func (c *serviceConfig) parseSecretStores() error {
	stores, err := secrets.ParseStores(c.secretStores)
	if err != nil {
		return api.InvalidConfig("--secret-store", "--secret-store: %v", err)
	}
	c.stores = stores
	for _, p := range c.envPrefixes {
		// An empty prefix (or a space) would let env:// resolve the
		// service's own configuration, VAULT_TOKEN included.
		if strings.TrimSpace(p) == "" {
			return api.InvalidConfig("--env-secret-prefix", "--env-secret-prefix must not be empty: env:// would resolve every variable "+
				"of the secrets service (VAULT_TOKEN too)")
		}
	}
	return nil
}

// vaultStore returns the vault:// store when c.stores lists vault, else
// nil. Errors: INVALID_CONFIG naming --secret-store, for the Vault settings
// NewVaultStore refuses.
func (c *serviceConfig) vaultStore() (secrets.Store, error) {
	if !slices.ContainsFunc(c.stores, func(s secrets.StoreConfig) bool { return s.Scheme == api.SchemeVault }) {
		if c.vaultAddr != "" {
			c.log.Warn().Msg("--vault-addr (VAULT_ADDR) is set but --secret-store does not list vault: vault:// references do not resolve")
		}
		return nil, nil
	}
	vs, err := secrets.NewVaultStore(secrets.VaultConfig{Address: c.vaultAddr, TokenFile: c.vaultTokenFile, Token: os.Getenv("VAULT_TOKEN")})
	if err != nil {
		return nil, api.InvalidConfig("--secret-store",
			"--secret-store vault: %v (configure it with --vault-addr and --vault-token-file or VAULT_TOKEN)", err)
	}
	return vs, nil
}

// stopper is a running service.
type stopper interface{ Stop() error }

type stopFunc func()

func (f stopFunc) Stop() error { f(); return nil }

// starters start one service each on a connection and the stores.
var starters = map[string]func(nc *nats.Conn, st *bus.Stores, c *serviceConfig) (stopper, error){
	"secrets": func(nc *nats.Conn, st *bus.Stores, c *serviceConfig) (stopper, error) {
		kr, err := loadKeyring(c.sealKeyFile)
		if err != nil {
			return nil, err
		}
		vault, err := c.vaultStore()
		if err != nil {
			return nil, err
		}
		return secrets.Start(nc, st, secrets.Options{Keyring: kr, Stores: c.stores, Vault: vault,
			EnvPrefixes: c.envPrefixes, Logger: c.log})
	},
	"accounts": func(nc *nats.Conn, st *bus.Stores, c *serviceConfig) (stopper, error) {
		return accounts.Start(nc, st, accounts.Options{Logger: c.log})
	},
	"reconciler": func(nc *nats.Conn, st *bus.Stores, c *serviceConfig) (stopper, error) {
		r, err := reconciler.Start(nc, st, reconciler.Options{Logger: c.log, ResyncInterval: c.resyncInterval})
		if err != nil {
			return nil, err
		}
		unregister, err := metrics.Register(r.Collector())
		if err != nil {
			// A second reconciler in this process: the first one's samples are served.
			c.log.Warn().Err(err).Msg("reconciler metrics not registered")
			unregister = func() {}
		}
		return stopFunc(func() { unregister(); r.Stop() }), nil
	},
	"poolctl": func(nc *nats.Conn, st *bus.Stores, c *serviceConfig) (stopper, error) {
		pc, err := poolctl.Start(nc, st, poolctl.Options{Logger: c.log})
		if err != nil {
			return nil, err
		}
		return stopFunc(pc.Stop), nil
	},
	"tenants": func(nc *nats.Conn, st *bus.Stores, c *serviceConfig) (stopper, error) {
		load := natsauth.Load
		if signing := os.Getenv(natsauth.EnvSigningKey); signing != "" { // compose: the keys come as variables
			load = func(dir string) (*natsauth.Authority, error) {
				return natsauth.LoadKeys(dir, []byte(signing), []byte(os.Getenv(natsauth.EnvIssuerKey)))
			}
		}
		auth, err := load(c.authDir)
		if err != nil {
			return nil, fmt.Errorf("--auth-dir: %w", err)
		}
		sys, err := auth.ConnectSys(c.conn)
		if err != nil {
			return nil, fmt.Errorf("tenants: SYS connection: %w", err)
		}
		svc, err := tenants.Start(nc, st, tenants.Options{Authority: auth, Sys: sys, Logger: c.log})
		if err != nil {
			sys.Close()
			return nil, err
		}
		return stopFunc(func() { _ = svc.Stop(); sys.Close() }), nil
	},
	"provider-hetzner": func(nc *nats.Conn, _ *bus.Stores, c *serviceConfig) (stopper, error) {
		var opts []hetzner.Option
		if c.hetznerEndpoint != "" {
			opts = append(opts, hetzner.WithEndpoint(c.hetznerEndpoint))
		}
		return provider.Serve(nc, hetzner.Definition(opts...), provider.ServeOptions{Logger: c.log})
	},
	"provider-hetzner-robot": func(nc *nats.Conn, _ *bus.Stores, c *serviceConfig) (stopper, error) {
		var opts []robot.Option
		if c.robotEndpoint != "" {
			opts = append(opts, robot.WithEndpoint(c.robotEndpoint))
		}
		return provider.Serve(nc, robot.Definition(opts...), provider.ServeOptions{Logger: c.log})
	},
	"provider-proxmox": func(nc *nats.Conn, _ *bus.Stores, c *serviceConfig) (stopper, error) {
		var opts []proxmox.Option
		if c.snippetsDir != "" {
			opts = append(opts, proxmox.WithSnippetWriter(proxmox.DirSnippetWriter(c.snippetsDir, c.snippetsStorage)))
		}
		if c.proxmoxEgress != nil {
			opts = append(opts, proxmox.WithEgressPolicy(*c.proxmoxEgress))
		}
		return provider.Serve(nc, proxmox.Definition(opts...), provider.ServeOptions{Logger: c.log})
	},
}

// serviceNames lists the services in start order.
func serviceNames() []string {
	names := make([]string, 0, len(starters))
	for n := range starters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// loadKeyring reads the seal keys from the COMPUTE_SEAL_KEY environment
// variable when set, else from path (created with a new key when absent).
func loadKeyring(path string) (*seal.Keyring, error) {
	if os.Getenv("COMPUTE_SEAL_KEY") != "" {
		return seal.KeyringFromEnv()
	}
	if path == "" {
		return nil, fmt.Errorf("no seal key: set COMPUTE_SEAL_KEY or --seal-key-file")
	}
	kr, _, err := seal.EnsureKeyFile(path)
	return kr, err
}

// runServices starts the named services and stops them in reverse order.
func runServices(nc *nats.Conn, st *bus.Stores, c *serviceConfig, names []string) (func(), error) {
	var running []stopper
	stopAll := func() {
		for i := len(running) - 1; i >= 0; i-- {
			_ = running[i].Stop()
		}
	}
	for _, n := range names {
		start, ok := starters[n]
		if !ok {
			stopAll()
			return nil, fmt.Errorf("unknown service %q (want one of %s)", n, strings.Join(serviceNames(), ", "))
		}
		stopGuard, err := c.guard(st, n)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("start %s: %w", n, err)
		}
		s, err := start(nc, st, c)
		if err != nil {
			stopGuard()
			stopAll()
			return nil, fmt.Errorf("start %s: %w", n, err)
		}
		// Stopped before the guard: its last mark covers every write.
		running = append(running, stopFunc(stopGuard), s)
		c.log.Info().Str("service", n).Msg("service started")
	}
	return stopAll, nil
}

// waitForSignal blocks until SIGINT or SIGTERM.
func waitForSignal() os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return <-ch
}

// openStores creates or opens the buckets and streams.
func openStores(nc *nats.Conn, replicas int) (*bus.Stores, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return bus.OpenStores(ctx, nc, bus.StoreOptions{Replicas: replicas})
}

// metricsFlag binds --metrics-addr with the command's default.
func metricsFlag(cmd *cobra.Command, c *serviceConfig, def string) {
	cmd.Flags().StringVar(&c.metricsAddr, "metrics-addr", envOr("COMPUTE_METRICS_ADDR", def),
		"address serving Prometheus metrics on "+metrics.Path+" (host:port; empty or 0: off; env COMPUTE_METRICS_ADDR)")
}

// metricsOn reports whether --metrics-addr asks for a metrics endpoint.
func (c *serviceConfig) metricsOn() bool { return c.metricsAddr != "" && c.metricsAddr != "0" }

// serveMetrics serves this process's metrics on c.metricsAddr; nil (and
// no error) when it is off. Errors: the address cannot be listened on.
func (c *serviceConfig) serveMetrics() (*metrics.Server, error) {
	if !c.metricsOn() {
		return nil, nil
	}
	srv, err := metrics.Serve(c.metricsAddr, c.log)
	if err != nil {
		return nil, err
	}
	c.log.Info().Str("url", srv.URL()).Msg("serving metrics")
	return srv, nil
}
