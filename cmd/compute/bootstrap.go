package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

// bootstrapCmd is `compute accounts bootstrap`: accounts.bootstrap, with
// --wait following the instance to Running.
func bootstrapCmd(g *globals) *cobra.Command {
	var req api.AccountBootstrapRequest
	var raid int
	var wait bool
	cmd := &cobra.Command{
		Use:   "bootstrap ID|NAME",
		Short: "Claim a dedicated server of the account into a host pool and install it (rescue, installimage, configure)",
		Long: "Claims server --server of the account (one of its offers: a free server) into --pool, a pool of\n" +
			"class metal-host or vps-host on the account, and bootstraps it: rescue system, hardware reset,\n" +
			"installimage with --image, reboot, the pool's configure step. Each step is recorded before it is\n" +
			"taken, so a crash resumes it. The reply is the instance whose machine the server is; deleting\n" +
			"it releases the server (the rental is never cancelled).",
		Example: `  compute accounts bootstrap robot --pool hosts --server 321 \
    --image /root/.oldroot/nfs/images/Ubuntu-2404-noble-amd64-base.tar.gz --wait`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("raid-level") {
				req.RAIDLevel = &raid
			}
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				id, err := c.Accounts.Resolve(ctx, args[0])
				if err != nil {
					return err
				}
				req.AccountID = id
				if err := resolveFlag(ctx, c.Pools.Resolve, &req.PoolID); err != nil {
					return err
				}
				inst, err := c.Accounts.Bootstrap(ctx, req)
				if err != nil {
					return err
				}
				if !wait {
					return showOne(g, instanceView, inst)
				}
				return g.wait(c, inst.ID, "running", 90*time.Minute)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.PoolID, "pool", "", "host pool id or name (class metal-host or vps-host)")
	fl.IntVar(&req.ServerNumber, "server", 0, "the server's number (accounts offers lists the free ones)")
	fl.StringVar(&req.Image, "image", "", "installimage image: a path in the rescue system or an http(s) URL")
	fl.StringVar(&req.Hostname, "hostname", "", "hostname and instance name (default bm-<server>)")
	fl.StringSliceVar(&req.Drives, "drive", nil, "drive to install on, e.g. /dev/nvme0n1 (repeatable; default installimage's)")
	fl.IntVar(&raid, "raid-level", 1, "software RAID level (0, 1, 5, 6, 10; -1: none)")
	fl.StringVar(&req.Flavor, "flavor", "", "pool flavor (default the pool's first)")
	fl.StringVar(&req.IdempotencyKey, "idempotency-key", "", "a retry with the same key returns the same instance")
	fl.BoolVar(&wait, "wait", false, "wait until the host runs, with progress")
	return cmd
}
