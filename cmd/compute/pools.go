package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

func poolsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "pools", Short: "Pools of instances on a provider account"}
	var req api.PoolCreateRequest
	var flavors []string
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create a pool (class provider, agent none) with flavors naming offers",
		Example: `  compute pools create --account pacct_01… --name web --flavor small=cx23:ubuntu-24.04`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, f := range flavors {
				fl, err := parseFlavor(f)
				if err != nil {
					return err
				}
				req.Flavors = append(req.Flavors, fl)
			}
			return g.request(bus.ResourcePools, "create", req, nil)
		},
	}
	create.Flags().StringVar(&req.ProviderAccountID, "account", "", "provider account id")
	create.Flags().StringVar(&req.Name, "name", "", "pool name")
	create.Flags().StringVar(&req.SiteID, "site", "", "site id (optional)")
	create.Flags().StringVar(&req.Class, "class", api.PoolClassProvider, "pool class")
	create.Flags().StringVar(&req.Agent, "agent", api.PoolAgentNone, "agent")
	create.Flags().StringArrayVar(&flavors, "flavor", nil, "flavor as name=offerId[:image] (repeatable)")
	accessFileFlag(create, &req)
	c.AddCommand(create, listCmd(g, bus.ResourcePools),
		idCmd(g, bus.ResourcePools, "get", "Show a pool"),
		idCmd(g, bus.ResourcePools, "delete", "Delete a pool (refused while it has instances)"))
	return c
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
