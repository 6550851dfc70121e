package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

func accountsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "accounts", Short: "Provider accounts"}
	var provider, name, configJSON string
	var sets []string
	create := &cobra.Command{
		Use:   "create",
		Short: "Register a provider account (credentials as secret references only)",
		Example: `  compute accounts create --provider hetzner-cloud --name prod \
    --set token=secret://demo/sec_01… --set location=fsn1`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := parseConfig(configJSON, sets)
			if err != nil {
				return err
			}
			return g.request(bus.ResourceAccounts, "create", api.AccountCreateRequest{Provider: provider, Name: name, Config: cfg}, nil)
		},
	}
	create.Flags().StringVar(&provider, "provider", "", "provider id (hetzner-cloud, proxmox, …)")
	create.Flags().StringVar(&name, "name", "", "account name")
	create.Flags().StringVar(&configJSON, "config", "", "config as a JSON object")
	create.Flags().StringArrayVar(&sets, "set", nil, "config field as key=value (repeatable; merged over --config)")

	var version int64
	update := &cobra.Command{
		Use:   "update ID",
		Short: "Change an account's name or config (optimistic: --version must be the current version)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var cfg map[string]any
			if configJSON != "" || len(sets) > 0 {
				var err error
				if cfg, err = parseConfig(configJSON, sets); err != nil {
					return err
				}
			}
			return g.request(bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: args[0], Version: version, Name: name, Config: cfg}, nil)
		},
	}
	update.Flags().Int64Var(&version, "version", 0, "the account version you read")
	update.Flags().StringVar(&name, "name", "", "new name")
	update.Flags().StringVar(&configJSON, "config", "", "new config as a JSON object")
	update.Flags().StringArrayVar(&sets, "set", nil, "config field as key=value (repeatable)")

	var q api.OfferQuery
	offers := &cobra.Command{
		Use:   "offers ID",
		Short: "List the offers (server types, sizes) the account's provider can create",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.request(bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: args[0], Query: q}, nil)
		},
	}
	offers.Flags().StringVar(&q.Region, "region", "", "region (location) to price and filter for")
	offers.Flags().StringVar(&q.Kind, "kind", "", "vps or metal")
	offers.Flags().IntVar(&q.MinVcpu, "min-vcpu", 0, "at least this many vCPUs")
	offers.Flags().Float64Var(&q.MinMemoryGiB, "min-memory", 0, "at least this much memory, GiB")
	offers.Flags().IntVar(&q.GPUs, "gpus", 0, "at least this many GPUs")

	c.AddCommand(create, update, offers, listCmd(g, bus.ResourceAccounts),
		idCmd(g, bus.ResourceAccounts, "get", "Show an account"),
		idCmd(g, bus.ResourceAccounts, "delete", "Delete an account (refused while pools use it)"))
	return c
}

// parseConfig merges a JSON object and key=value pairs (values that parse as
// JSON numbers or booleans are taken as such). Errors name the bad pair.
func parseConfig(configJSON string, sets []string) (map[string]any, error) {
	cfg := map[string]any{}
	if configJSON != "" {
		if err := json.Unmarshal([]byte(configJSON), &cfg); err != nil {
			return nil, fmt.Errorf("--config is not a JSON object: %v", err)
		}
	}
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want key=value", kv)
		}
		var scalar any
		if err := json.Unmarshal([]byte(v), &scalar); err == nil {
			switch scalar.(type) {
			case float64, bool:
				cfg[k] = scalar
				continue
			}
		}
		cfg[k] = v
	}
	return cfg, nil
}
