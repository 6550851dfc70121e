package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

func providersCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "providers", Short: "Providers: the config fields an account takes and what each can do"}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the providers that serve, with their capabilities and config fields",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				infos, err := c.Providers.List(ctx)
				if err != nil {
					return err
				}
				return show(g, providerView, api.List[api.ProviderInfo]{Items: infos}, infos, "")
			})
		},
	}
	describe := &cobra.Command{
		Use:   "describe ID",
		Short: "Show a provider's config fields (types, defaults, which are secrets) and capabilities",
		Long: "Prints the provider's id, version and capabilities, then a table of the config fields an\n" +
			"account of it takes (nested fields as parent.field); a field of type secret takes a secret\n" +
			"reference (compute secrets put), never a value.",
		Example: `  compute providers describe hetzner-cloud`,
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				info, err := c.Providers.Describe(ctx, args[0])
				if err != nil {
					return err
				}
				return showProvider(g, info)
			})
		},
	}
	c.AddCommand(list, describe)
	return c
}

// showProvider prints info: json, yaml and id as show does; the tables
// as a header of id, version and capabilities over the fields' table.
func showProvider(g *globals, info api.ProviderInfo) error {
	format, err := g.format()
	if err != nil {
		return err
	}
	if format != formatTable && format != formatWide {
		return showOne(g, providerView, info)
	}
	fmt.Fprintf(g.out, "Provider:      %s %s\nCapabilities:  %s\n\n", info.ID, info.Version, cell(strings.Join(info.Capabilities, ", ")))
	return writeTable(g.out, fieldView.columns, flatFields("", info.Fields), format == formatWide)
}
