package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// serviceFlags binds the flags every service starter reads.
func serviceFlags(cmd *cobra.Command, c *serviceConfig) {
	f := cmd.Flags()
	f.StringVar(&c.sealKeyFile, "seal-key-file", envOr("COMPUTE_SEAL_KEY_FILE", c.sealKeyFile), "secrets: seal key file, created 0600 when absent (env COMPUTE_SEAL_KEY_FILE; COMPUTE_SEAL_KEY overrides)")
	f.StringSliceVar(&c.envTenants, "env-tenants", []string{"root"}, "secrets: tenants allowed to resolve env:// references")
	f.StringVar(&c.hetznerEndpoint, "hetzner-endpoint", envOr("COMPUTE_HETZNER_ENDPOINT", c.hetznerEndpoint), "provider-hetzner: Hetzner Cloud API endpoint (env COMPUTE_HETZNER_ENDPOINT; default the real API)")
	f.DurationVar(&c.resyncInterval, "resync-interval", 0, "reconciler: requeue every instance this often (default 10m; negative disables)")
}

func serveCmd(g *globals) *cobra.Command {
	c := &serviceConfig{sealKeyFile: "./data/seal.key"}
	var replicas int
	cmd := &cobra.Command{
		Use:   "serve SERVICE...",
		Short: "Run one or more services against a NATS server: " + strings.Join(serviceNames(), ", "),
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c.log = g.logger()
			o := g.conn
			o.Name = "compute-" + strings.Join(args, "+")
			nc, err := connectService(o)
			if err != nil {
				return err
			}
			defer nc.Close()
			st, err := openStores(nc, replicas)
			if err != nil {
				return fmt.Errorf("open stores: %w", err)
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
	cmd.Flags().IntVar(&replicas, "replicas", 1, "replicas of buckets and streams (3 on a 3-node cluster)")
	return cmd
}
