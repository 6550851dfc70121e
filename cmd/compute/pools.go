package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

func poolsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "pools", Short: "Pools of instances on a provider account"}
	var req api.PoolCreateRequest
	var flavors []string
	var wipe bool
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create a pool (class provider, agent none) with flavors naming offers",
		Example: `  compute pools create --account prod --name web --flavor small=cx23:ubuntu-24.04`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, f := range flavors {
				fl, err := parseFlavor(f)
				if err != nil {
					return err
				}
				req.Flavors = append(req.Flavors, fl)
			}
			if wipe {
				req.Release = &api.PoolRelease{Wipe: true}
			}
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				if err := resolveFlag(ctx, c.Accounts.Resolve, &req.ProviderAccountID); err != nil {
					return err
				}
				p, err := c.Pools.Create(ctx, req)
				if err != nil {
					return err
				}
				return showOne(g, poolView, p)
			})
		},
	}
	create.Flags().StringVar(&req.ProviderAccountID, "account", "", "provider account id or name")
	create.Flags().StringVar(&req.Name, "name", "", "pool name (unique in the tenant)")
	create.Flags().StringVar(&req.SiteID, "site", "", "site id (optional)")
	create.Flags().StringVar(&req.Class, "class", api.PoolClassProvider, "pool class")
	create.Flags().StringVar(&req.Agent, "agent", api.PoolAgentNone, "agent")
	create.Flags().StringArrayVar(&flavors, "flavor", nil, "flavor as name=offerId[:image] (repeatable)")
	create.Flags().BoolVar(&wipe, "wipe-on-release", false,
		"host pools: a host's release boots the rescue system and wipes its disks before the server is un-claimed")
	accessFileFlag(create, &req)
	poolNetworkFlags(create, &req)

	var lreq api.ListRequest
	list := listCommand(g, &lreq, "pools", func(ctx context.Context, c *client.Client) error {
		page, err := c.Pools.List(ctx, lreq)
		if err != nil {
			return err
		}
		return show(g, poolView, page, page.Items, page.NextCursor)
	})
	get := handleCmd(g, "get", "Show a pool", func(ctx context.Context, c *client.Client, handle string) error {
		id, err := c.Pools.Resolve(ctx, handle)
		if err != nil {
			return err
		}
		p, err := c.Pools.Get(ctx, id)
		if err != nil {
			return err
		}
		return showPool(g, p)
	})
	del := handleCmd(g, "delete", "Delete a pool (refused while it has instances)", func(ctx context.Context, c *client.Client,
		handle string) error {
		id, err := c.Pools.Resolve(ctx, handle)
		if err != nil {
			return err
		}
		d, err := c.Pools.Delete(ctx, id)
		if err != nil {
			return err
		}
		return showOne(g, deletedView, d)
	})
	c.AddCommand(create, list, get, del)
	c.AddCommand(poolSizeCmds(g)...)
	return c
}

// handleCmd is a verb whose one argument is a record's id or name (the
// run resolves it), run with a client.
func handleCmd(g *globals, verb, short string, run func(ctx context.Context, c *client.Client, handle string) error) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " ID|NAME",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withClient(func(ctx context.Context, c *client.Client) error { return run(ctx, c, args[0]) })
		},
	}
}

// resolveFlag replaces a flag's value, a record's id or name, by the id
// resolve finds for it; an empty value stays empty, for the service to
// refuse naming its own field.
func resolveFlag(ctx context.Context, resolve func(context.Context, string) (string, error), value *string) error {
	if *value == "" {
		return nil
	}
	id, err := resolve(ctx, *value)
	if err != nil {
		return err
	}
	*value = id
	return nil
}

// parseFlavor reads name=offerId[:image].
func parseFlavor(s string) (api.Flavor, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return api.Flavor{}, fmt.Errorf("--flavor %q: want name=offerId[:image]", s)
	}
	offer, image, _ := strings.Cut(rest, ":")
	return api.Flavor{Name: name, OfferID: offer, Image: image}, nil
}
