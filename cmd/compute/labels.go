package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

// parseLabels reads repeated --label KEY=VALUE flags (VALUE may be
// empty) into labels; nil when none was given. Errors name the flag and
// the value without '='; the service checks keys and values
// (INVALID_INPUT at labels[<key>]).
func parseLabels(flag string, values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(values))
	for _, kv := range values {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want KEY=VALUE (the value may be empty)", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}

// labelsText is labels as "k=v,k2=v2" in key order ("" for none).
func labelsText(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// updateCmd is `compute instances update`.
func updateCmd(g *globals) *cobra.Command {
	var req api.InstanceUpdateRequest
	var labels []string
	var clear bool
	update := &cobra.Command{
		Use:   "update ID|NAME [--label KEY=VALUE ...] [--clear-labels] [--image IMAGE] [--flavor FLAVOR]",
		Short: "Change an instance: its labels, its image (a reinstall) or its flavor (a resize)",
		Long: "Changes the instance's desired spec; the reconciler converges (generation grows by one).\n" +
			"--label replaces all of the instance's labels with the ones given (repeatable); --clear-labels\n" +
			"removes them all. --image reinstalls the machine with that image; --flavor (one of the pool's)\n" +
			"resizes it. --version refuses the change (CONFLICT) unless the record is at that version.",
		Example: "  compute instances update web-1 --label env=prod --label team=web\n  compute instances update web-1 --image debian-12",
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			l, err := parseLabels("label", labels)
			if err != nil {
				return err
			}
			switch {
			case clear && l != nil:
				return fmt.Errorf("--clear-labels and --label: give one of them")
			case clear:
				l = map[string]string{}
			}
			req.Labels = l
			if req.Labels == nil && req.Image == "" && req.Flavor == "" {
				return fmt.Errorf("nothing to change: give --label, --clear-labels, --image or --flavor")
			}
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error {
				inst, err := c.Instances.Update(ctx, id, req)
				if err != nil {
					return err
				}
				return showOne(g, instanceView, inst)
			})
		},
	}
	fl := update.Flags()
	fl.StringArrayVar(&labels, "label", nil, "label KEY=VALUE (repeatable): replaces all labels with the ones given")
	fl.BoolVar(&clear, "clear-labels", false, "remove every label")
	fl.StringVar(&req.Image, "image", "", "reinstall with this image")
	fl.StringVar(&req.Flavor, "flavor", "", "resize to this flavor of the pool")
	fl.Int64Var(&req.Version, "version", 0, "the record version read (CONFLICT if it changed since)")
	return update
}
