package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
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
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				a, err := c.Accounts.Create(ctx, api.AccountCreateRequest{Provider: provider, Name: name, Config: cfg})
				if err != nil {
					return err
				}
				return showOne(g, accountView, a)
			})
		},
	}
	create.Flags().StringVar(&provider, "provider", "", "provider id (hetzner-cloud, proxmox, …)")
	create.Flags().StringVar(&name, "name", "", "account name (unique in the tenant)")
	create.Flags().StringVar(&configJSON, "config", "", "config as a JSON object")
	create.Flags().StringArrayVar(&sets, "set", nil, "config field as key=value (repeatable; merged over --config)")

	var version int64
	update := &cobra.Command{
		Use:   "update ID|NAME",
		Short: "Change an account's name or config fields (--set merges into the current config)",
		Long: "Reads the account, applies the change and writes it with the version read (optimistic\n" +
			"concurrency). --set key=value changes that field and keeps the others, as in create;\n" +
			"--config replaces the whole config (--set then merges over it). With --version the change is\n" +
			"made only on that version (CONFLICT otherwise); without it, a write that meets another\n" +
			"change (CONFLICT) reads the account again and re-applies the change, up to " + strconv.Itoa(updateAttempts) + " times.",
		Example: `  compute accounts update prod --set location=nbg1`,
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				id, err := c.Accounts.Resolve(ctx, args[0])
				if err != nil {
					return err
				}
				a, err := updateAccount(ctx, c, id, version, name, configJSON, sets)
				if err != nil {
					return err
				}
				return showOne(g, accountView, a)
			})
		},
	}
	update.Flags().Int64Var(&version, "version", 0, "make the change only on this version (default: the version read)")
	update.Flags().StringVar(&name, "name", "", "new name")
	update.Flags().StringVar(&configJSON, "config", "", "new config as a JSON object (replaces the config)")
	update.Flags().StringArrayVar(&sets, "set", nil,
		"config field as key=value (repeatable; merged into the current config, or over --config)")

	var q api.OfferQuery
	var rawJSON bool
	var pool string
	offers := &cobra.Command{
		Use:   "offers ID|NAME",
		Short: "List the offers (server types, sizes) the account's provider can create, cheapest first",
		Long: "Prints the offers as a table sorted by price per hour (offers without a price last), with the\n" +
			"price of a 730-hour month (an upper bound: Hetzner caps a month at its monthly price) and the\n" +
			"CPU architecture. -o json (or --json) prints the provider's list as it is, in the provider's order.\n" +
			"With --pool, AVAILABLE is for where that pool's creates place (Proxmox VE: its placement.nodes;\n" +
			"Hetzner Cloud: the first of its placement.locations where the type is available, its REGION).",
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if rawJSON {
				if g.output != "" && g.output != formatJSON {
					return fmt.Errorf("--json and -o %s: pick one", g.output)
				}
				g.output = formatJSON
			}
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				id, err := c.Accounts.Resolve(ctx, args[0])
				if err != nil {
					return err
				}
				poolID := ""
				if pool != "" {
					if poolID, err = c.Pools.Resolve(ctx, pool); err != nil {
						return err
					}
				}
				offers, err := c.Accounts.PoolOffers(ctx, id, poolID, q)
				if err != nil {
					return err
				}
				reply := api.List[api.Offer]{Items: offers}
				sorted := slices.Clone(offers)
				api.SortOffersByPrice(sorted)
				return show(g, offerView, reply, sorted, "")
			})
		},
	}
	offers.Flags().StringVar(&q.Region, "region", "", "region (location) to price and filter for")
	offers.Flags().StringVar(&q.Kind, "kind", "", "vps or metal")
	offers.Flags().IntVar(&q.MinVcpu, "min-vcpu", 0, "at least this many vCPUs")
	offers.Flags().Float64Var(&q.MinMemoryGiB, "min-memory", 0, "at least this much memory, GiB")
	offers.Flags().IntVar(&q.GPUs, "gpus", 0, "at least this many GPUs")
	offers.Flags().BoolVar(&rawJSON, "json", false, "print the raw list as JSON, in the provider's order (-o json)")
	offers.Flags().StringVar(&pool, "pool", "", "a pool of the account (id or name): availability for where its creates place")

	var lreq api.ListRequest
	list := listCommand(g, &lreq, "accounts", func(ctx context.Context, c *client.Client) error {
		page, err := c.Accounts.List(ctx, lreq)
		if err != nil {
			return err
		}
		return show(g, accountView, page, page.Items, page.NextCursor)
	})
	get := handleCmd(g, "get", "Show an account", func(ctx context.Context, c *client.Client, handle string) error {
		id, err := c.Accounts.Resolve(ctx, handle)
		if err != nil {
			return err
		}
		a, err := c.Accounts.Get(ctx, id)
		if err != nil {
			return err
		}
		return showOne(g, accountView, a)
	})
	del := handleCmd(g, "delete", "Delete an account (refused while pools use it)", func(ctx context.Context, c *client.Client,
		handle string) error {
		id, err := c.Accounts.Resolve(ctx, handle)
		if err != nil {
			return err
		}
		d, err := c.Accounts.Delete(ctx, id)
		if err != nil {
			return err
		}
		return showOne(g, deletedView, d)
	})
	c.AddCommand(create, update, offers, list, get, del, bootstrapCmd(g))
	return c
}

// updateAttempts bounds the reads and writes of one `accounts update`
// that meets concurrent changes.
const updateAttempts = 3

// updateAccount reads account id, applies name, configJSON and sets to it
// (parseConfig over its config) and writes it with the version read, which
// must be version when that is not 0. Without version, a CONFLICT reads
// and applies again, updateAttempts times at most.
func updateAccount(ctx context.Context, c *client.Client, id string, version int64,
	name, configJSON string, sets []string) (api.Account, error) {
	for attempt := 1; ; attempt++ {
		current, err := c.Accounts.Get(ctx, id)
		if err != nil {
			return api.Account{}, err
		}
		req := api.AccountUpdateRequest{ID: id, Version: current.Version, Name: name}
		if version != 0 {
			req.Version = version
		}
		if configJSON != "" || len(sets) > 0 {
			cfg, err := parseConfig(current.Config, configJSON, sets)
			if err != nil {
				return api.Account{}, err
			}
			req.Config = cfg
		}
		a, err := c.Accounts.Update(ctx, req)
		if version != 0 || !api.IsCode(err, api.CodeConflict) {
			return a, err
		}
		if attempt == updateAttempts {
			return api.Account{}, api.Errorf(api.CodeConflict, "account %s changed %d times while being updated; run the update again", id, attempt).
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
