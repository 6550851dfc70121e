package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
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
			cfg, err := parseConfig(nil, configJSON, sets)
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
		Short: "Change an account's name or config fields (--set merges into the current config)",
		Long: "Reads the account, applies the change and writes it with the version read (optimistic\n" +
			"concurrency). --set key=value changes that field and keeps the others, as in create;\n" +
			"--config replaces the whole config (--set then merges over it). With --version the change is\n" +
			"made only on that version (CONFLICT otherwise); without it, a write that meets another\n" +
			"change (CONFLICT) reads the account again and re-applies the change, up to " + strconv.Itoa(updateAttempts) + " times.",
		Example: `  compute accounts update pacct_01… --set location=nbg1`,
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			nc, err := g.connect()
			if err != nil {
				return err
			}
			defer nc.Close()
			return g.updateAccount(nc, args[0], version, name, configJSON, sets)
		},
	}
	update.Flags().Int64Var(&version, "version", 0, "make the change only on this version (default: the version read)")
	update.Flags().StringVar(&name, "name", "", "new name")
	update.Flags().StringVar(&configJSON, "config", "", "new config as a JSON object (replaces the config)")
	update.Flags().StringArrayVar(&sets, "set", nil,
		"config field as key=value (repeatable; merged into the current config, or over --config)")

	var q api.OfferQuery
	offers := &cobra.Command{
		Use:   "offers ID",
		Short: "List the offers (server types, sizes) the account's provider can create",
		Args:  exactArgs(1),
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

// updateAttempts bounds the reads and writes of one `accounts update`
// that meets concurrent changes.
const updateAttempts = 3

// updateAccount reads account id, applies name, configJSON and sets to it
// (parseConfig over its config) and writes it with the version read, which
// must be version when that is not 0. Without version, a CONFLICT reads
// and applies again, updateAttempts times at most.
func (g *globals) updateAccount(nc *nats.Conn, id string, version int64, name, configJSON string, sets []string) error {
	for attempt := 1; ; attempt++ {
		var current api.Account
		if err := g.call(context.Background(), nc, bus.ResourceAccounts, "get", api.IDRequest{ID: id}, &current); err != nil {
			return err
		}
		req := api.AccountUpdateRequest{ID: id, Version: current.Version, Name: name}
		if version != 0 {
			req.Version = version
		}
		if configJSON != "" || len(sets) > 0 {
			cfg, err := parseConfig(current.Config, configJSON, sets)
			if err != nil {
				return err
			}
			req.Config = cfg
		}
		err := g.call(context.Background(), nc, bus.ResourceAccounts, "update", req, nil)
		if version != 0 || !api.IsCode(err, api.CodeConflict) {
			return err
		}
		if attempt == updateAttempts {
			return api.Errorf(api.CodeConflict, "account %s changed %d times while being updated; run the update again", id, attempt).
				WithPath("version")
		}
	}
}

// parseConfig merges key=value pairs (values that parse as JSON numbers or
// booleans are taken as such) over a JSON object, or over a copy of base
// when configJSON is "". Errors name the bad pair.
func parseConfig(base map[string]any, configJSON string, sets []string) (map[string]any, error) {
	cfg := maps.Clone(base)
	if cfg == nil || configJSON != "" {
		cfg = map[string]any{}
	}
	if configJSON != "" {
		if err := json.Unmarshal([]byte(configJSON), &cfg); err != nil {
			return nil, fmt.Errorf("--config is not a JSON object: %w", err)
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
