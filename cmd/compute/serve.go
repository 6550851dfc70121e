package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/secrets"
)

// serviceFlags binds the flags every service starter reads.
func serviceFlags(cmd *cobra.Command, c *serviceConfig) {
	f := cmd.Flags()
	f.StringVar(&c.sealKeyFile, "seal-key-file", envOr("COMPUTE_SEAL_KEY_FILE", c.sealKeyFile),
		"secrets: seal key file, created 0600 when absent (env COMPUTE_SEAL_KEY_FILE; COMPUTE_SEAL_KEY overrides)")
	f.StringArrayVar(&c.secretStores, "secret-store", strings.Fields(os.Getenv("COMPUTE_SECRETS_STORES")),
		"secrets: a store references may name, repeatable: secret, env[:TENANT,...] or vault[:TENANT,...] "+
			"(env and vault default to tenant "+secrets.DefaultOperatorTenant+"); "+
			"a list replaces the default, secret only (env COMPUTE_SECRETS_STORES, space-separated)")
	f.StringArrayVar(&c.envPrefixes, "env-secret-prefix", strings.Fields(envOr("COMPUTE_ENV_SECRET_PREFIXES", secrets.EnvSecretPrefix)),
		"secrets: env:// resolves only variables whose names start with this, repeatable "+
			"(env COMPUTE_ENV_SECRET_PREFIXES, space-separated)")
	f.StringVar(&c.vaultAddr, "vault-addr", os.Getenv("VAULT_ADDR"), "secrets: HashiCorp Vault address of the vault store (env VAULT_ADDR)")
	f.StringVar(&c.vaultTokenFile, "vault-token-file", os.Getenv("COMPUTE_VAULT_TOKEN_FILE"),
		"secrets: file holding the Vault token, re-read before each read (env COMPUTE_VAULT_TOKEN_FILE; else env VAULT_TOKEN)")
	f.StringVar(&c.hetznerEndpoint, "hetzner-endpoint", envOr("COMPUTE_HETZNER_ENDPOINT", c.hetznerEndpoint),
		"provider-hetzner: Hetzner Cloud API endpoint (env COMPUTE_HETZNER_ENDPOINT; default the real API)")
	f.StringVar(&c.robotEndpoint, "robot-endpoint", envOr("COMPUTE_ROBOT_ENDPOINT", c.robotEndpoint),
		"provider-hetzner-robot: Hetzner Robot webservice endpoint (env COMPUTE_ROBOT_ENDPOINT; default the real one)")
	f.StringVar(&c.snippetsDir, "proxmox-snippets-dir", envOr("COMPUTE_PROXMOX_SNIPPETS_DIR", c.snippetsDir),
		"provider-proxmox: directory of a shared PVE snippets storage, for cloud-init user data (env COMPUTE_PROXMOX_SNIPPETS_DIR)")
	f.StringVar(&c.snippetsStorage, "proxmox-snippets-storage", envOr("COMPUTE_PROXMOX_SNIPPETS_STORAGE", "local"),
		"provider-proxmox: PVE storage id of that directory")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if err := c.parseSecretStores(); err != nil {
			return err
		}
		return c.parseEgress()
	}
	f.StringVar(&c.proxmoxAllowed, "proxmox-allowed-networks", os.Getenv("COMPUTE_PROXMOX_ALLOWED_NETWORKS"),
		"provider-proxmox: comma-separated CIDR prefixes or IP addresses account urls may connect to "+
			"(env COMPUTE_PROXMOX_ALLOWED_NETWORKS; empty: any address but link-local ones such as cloud metadata)")
	f.BoolVar(&c.acceptStoreLoss, "accept-store-loss", false,
		"secrets, accounts, reconciler: serve a store that holds less than was acknowledged (truncated, or restored from a backup) "+
			"and lower its high-water mark; once, after a restore (docs/operations.md)")
	f.BoolVar(&c.allowUnsynced, "allow-unsynced-store", false,
		"serve on a nats-server that does not fsync every write (no sync_interval: always); for development only")
	f.StringVar(&c.authDir, "auth-dir", envOr("COMPUTE_NATS_AUTH_DIR", c.authDir),
		"tenants: authority directory of `compute nats-init` (its keys/ sign account and user JWTs; env COMPUTE_NATS_AUTH_DIR)")
	f.DurationVar(&c.resyncInterval, "resync-interval", 0, "reconciler: requeue every instance this often (default 10m; negative disables)")
}

func serveCmd(g *globals) *cobra.Command {
	c := &serviceConfig{sealKeyFile: "./data/seal.key", authDir: "deploy/auth"}
	var replicas int
	var cc consoleConfig
	cmd := &cobra.Command{
		Use:   "serve SERVICE...",
		Short: "Run one or more services against a NATS server: " + strings.Join(append(serviceNames(), consoleService), ", "),
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c.log = g.logger()
			ms, err := c.serveMetrics()
			if err != nil {
				return fmt.Errorf("--metrics-addr %s: %w", c.metricsAddr, err)
			}
			if ms != nil {
				defer func() { _ = ms.Close() }()
			}
			args, withConsole := withoutConsole(args)
			if withConsole {
				cs, err := startConsole(cc, g.conn.URL, g.conn.CAFile, c.log)
				if err != nil {
					return err
				}
				defer cs.Close()
				c.log.Info().Str("service", consoleService).Str("url", cs.URL()).Msg("service started")
				if len(args) == 0 {
					sig := waitForSignal()
					c.log.Info().Str("signal", sig.String()).Msg("stopping")
					return nil
				}
			}
			o := g.conn
			o.Name = "compute-" + strings.Join(args, "+")
			if o.InboxPrefix == "" {
				o.InboxPrefix = bus.InboxRoot + "_svc_" + strings.Join(args, "_")
			}
			c.conn = o
			nc, err := connectService(o)
			if err != nil {
				return err
			}
			defer nc.Close()
			// Providers keep no state: their NATS users have no JetStream access.
			var st *bus.Stores
			if slices.ContainsFunc(args, func(n string) bool { return !strings.HasPrefix(n, "provider-") }) {
				if err := c.checkSync(nc); err != nil {
					return err
				}
				if st, err = openStores(nc, replicas); err != nil {
					return fmt.Errorf("open stores: %w", err)
				}
			}
			stop, err := runServices(nc, st, c, args)
			if err != nil {
				return err
			}
			sig := waitForSignal()
			c.log.Info().Str("signal", sig.String()).Msg("stopping")
			stop()
			return nil
		},
	}
	serviceFlags(cmd, c)
	metricsFlag(cmd, c, "")
	cmd.Flags().IntVar(&replicas, "replicas", 1, "replicas of buckets and streams (3 on a 3-node cluster)")
	consoleFlags(cmd, &cc, "127.0.0.1:8480", "console: address the web console listens on")
	return cmd
}
