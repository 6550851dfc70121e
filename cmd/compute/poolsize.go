package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

// poolSizeCmds are the verbs of sized pools: scale, update (a deploy) and
// rollback (issue 15). pools get prints their status (showPool).
func poolSizeCmds(g *globals) []*cobra.Command {
	var size int
	var flavor string
	scale := &cobra.Command{
		Use:     "scale ID|NAME --size N [--flavor F]",
		Short:   "Keep N instances of a flavor in the pool (the pool controller makes and deletes them)",
		Example: "  compute pools scale web --size 3\n  compute pools scale web --size 0 --flavor gpu",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("size") {
				return api.InvalidInput("--size", "--size is required")
			}
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				p, err := resolvePool(ctx, c, args[0])
				if err != nil {
					return err
				}
				f := flavor
				if f == "" {
					if len(p.Flavors) != 1 {
						return api.InvalidInput("--flavor", "pool %s has %d flavors: name one with --flavor", p.ID, len(p.Flavors))
					}
					f = p.Flavors[0].Name
				}
				p, err = c.Pools.Update(ctx, api.PoolUpdateRequest{ID: p.ID, Sizes: map[string]int{f: size}})
				if err != nil {
					return err
				}
				return showPool(g, p)
			})
		},
	}
	scale.Flags().IntVar(&size, "size", 0, "instances of the flavor to keep (0 to "+strconv.Itoa(api.MaxPoolSize)+")")
	scale.Flags().StringVar(&flavor, "flavor", "", "the flavor (default: the pool's only flavor)")

	var (
		image, userDataFile string
		labels, sshKeys     []string
		surge, unavailable  int
	)
	update := &cobra.Command{
		Use:   "update ID|NAME [--image X] [--label k=v]... [--user-data-file F] [--ssh-key K]... [--max-surge N] [--max-unavailable N]",
		Short: "Change the pool's instance template (a new revision, rolled over the pool) or its rollout bounds",
		Long: "A template flag replaces the template: flags not given take the current template's value. A template that differs " +
			"from the current one is a new revision: the pool controller replaces the instances one at a time " +
			"(within --max-surge and --max-unavailable).",
		Example: "  compute pools update web --image debian-12\n  compute pools update web --max-surge 0 --max-unavailable 2",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				p, err := resolvePool(ctx, c, args[0])
				if err != nil {
					return err
				}
				req := api.PoolUpdateRequest{ID: p.ID, Version: p.Version}
				if fl.Changed("image") || fl.Changed("label") || fl.Changed("user-data-file") || fl.Changed("ssh-key") {
					t, err := templateFromFlags(p.Template, fl.Changed, image, labels, userDataFile, sshKeys)
					if err != nil {
						return err
					}
					req.Template = &t
				}
				if fl.Changed("max-surge") || fl.Changed("max-unavailable") {
					r := p.RolloutOrDefault()
					if fl.Changed("max-surge") {
						r.MaxSurge = surge
					}
					if fl.Changed("max-unavailable") {
						r.MaxUnavailable = unavailable
					}
					req.Rollout = &r
				}
				if req.Template == nil && req.Rollout == nil {
					return api.InvalidInput("--image", "nothing to change: give a template flag or a rollout bound")
				}
				if p, err = c.Pools.Update(ctx, req); err != nil {
					return err
				}
				return showPool(g, p)
			})
		},
	}
	uf := update.Flags()
	uf.StringVar(&image, "image", "", "image of the pool's instances (empty: each flavor's)")
	uf.StringArrayVar(&labels, "label", nil, "label k=v of the pool's instances (repeatable; replaces the template's labels)")
	uf.StringVar(&userDataFile, "user-data-file", "", "cloud-init user data file of the pool's instances")
	uf.StringArrayVar(&sshKeys, "ssh-key", nil, "OpenSSH public key of the pool's instances (repeatable; replaces the template's keys)")
	uf.IntVar(&surge, "max-surge", api.DefaultMaxSurge, "rollout: instances above the size at most")
	uf.IntVar(&unavailable, "max-unavailable", api.DefaultMaxUnavailable, "rollout: instances of the size not Running at most")

	var revision int64
	rollback := &cobra.Command{
		Use:     "rollback ID|NAME [--revision N]",
		Short:   "Roll the pool back to the previous (or a named) template revision: a new revision, rolled over the pool",
		Example: "  compute pools rollback web\n  compute pools rollback web --revision 2",
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				id, err := c.Pools.Resolve(ctx, args[0])
				if err != nil {
					return err
				}
				p, err := c.Pools.Rollback(ctx, api.PoolRollbackRequest{ID: id, Revision: revision})
				if err != nil {
					return err
				}
				return showPool(g, p)
			})
		},
	}
	rollback.Flags().Int64Var(&revision, "revision", 0, "the revision whose template to roll back to (default: the one before the current)")
	return []*cobra.Command{scale, update, rollback}
}

// resolvePool reads the pool handle names.
func resolvePool(ctx context.Context, c *client.Client, handle string) (api.Pool, error) {
	id, err := c.Pools.Resolve(ctx, handle)
	if err != nil {
		return api.Pool{}, err
	}
	return c.Pools.Get(ctx, id)
}

// templateFromFlags is cur (nil: empty) with the flags that were given.
func templateFromFlags(cur *api.PoolTemplate, changed func(string) bool, image string, labels []string, userDataFile string,
	sshKeys []string) (api.PoolTemplate, error) {
	var t api.PoolTemplate
	if cur != nil {
		t = *cur
	}
	if changed("image") {
		t.Image = image
	}
	if changed("label") {
		t.Labels = map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok || k == "" {
				return t, api.InvalidInput("--label", "--label %q: want key=value", l)
			}
			t.Labels[k] = v
		}
	}
	if changed("user-data-file") {
		b, err := os.ReadFile(userDataFile)
		if err != nil {
			return t, api.InvalidInput("--user-data-file", "--user-data-file: %v", err)
		}
		t.UserData = string(b)
	}
	if changed("ssh-key") {
		t.SSHKeys = sshKeys
	}
	return t, nil
}

// showPool prints a pool; on a table also its size, status and revisions.
func showPool(g *globals, p api.Pool) error {
	if err := showOne(g, poolView, p); err != nil {
		return err
	}
	format, _ := g.format()
	if (format != formatTable && format != formatWide) || p.Sizes == nil {
		return nil
	}
	fmt.Fprintln(g.out)
	r := p.RolloutOrDefault()
	fmt.Fprintf(g.out, "Revision %d, rollout maxSurge %d maxUnavailable %d\n", p.Revision, r.MaxSurge, r.MaxUnavailable)
	if st := p.Status; st != nil {
		fmt.Fprintf(g.out, "Status: %s (%s); revisions %d → %d\n\n", st.Rollout, st.Message, st.CurrentRevision, st.TargetRevision)
		if err := writeTable(g.out, flavorStatusColumns, st.Flavors, false); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(g.out, "Status: not seen by the pool controller yet")
	}
	fmt.Fprintln(g.out)
	return writeTable(g.out, revisionColumns, p.Revisions, false)
}

var flavorStatusColumns = []column[api.PoolFlavorStatus]{
	{name: "FLAVOR", value: func(f *api.PoolFlavorStatus) string { return f.Flavor }},
	{name: "SIZE", value: func(f *api.PoolFlavorStatus) string { return strconv.Itoa(f.Size) }},
	{name: "REPLICAS", value: func(f *api.PoolFlavorStatus) string { return strconv.Itoa(f.Replicas) }},
	{name: "UPDATED", value: func(f *api.PoolFlavorStatus) string { return strconv.Itoa(f.Updated) }},
	{name: "READY", value: func(f *api.PoolFlavorStatus) string { return strconv.Itoa(f.Ready) }},
}

var revisionColumns = []column[api.PoolRevision]{
	{name: "REVISION", value: func(r *api.PoolRevision) string { return strconv.FormatInt(r.Revision, 10) }},
	{name: "IMAGE", value: func(r *api.PoolRevision) string { return r.Template.Image }},
	{name: "LABELS", value: func(r *api.PoolRevision) string { return len0(len(r.Template.Labels)) }},
	{name: "USER-DATA", value: func(r *api.PoolRevision) string { return yesNo(r.Template.UserData != "") }},
	{name: "ROLLBACK-OF", value: func(r *api.PoolRevision) string { return len0(int(r.RollbackOf)) }},
	{name: "CREATED", value: func(r *api.PoolRevision) string { return timestamp(r.CreatedAt) }},
}

// sizesText prints a pool's sizes as flavor=n, in flavor order ("" when
// the pool is not sized).
func sizesText(sizes map[string]int) string {
	names := slices.Sorted(maps.Keys(sizes))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.Itoa(sizes[n])
	}
	return strings.Join(parts, ",")
}

// len0 prints n, or nothing for 0.
func len0(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
