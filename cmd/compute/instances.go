package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

func instancesCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "instances", Short: "Instances: machines the reconciler keeps as declared"}
	var req api.InstanceCreateRequest
	var userDataFile string
	var labels []string
	var wait bool
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create an instance in a pool",
		Example: `  compute instances create --pool web --flavor small --name web-1 --label env=prod --wait`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if userDataFile != "" {
				data, err := os.ReadFile(userDataFile)
				if err != nil {
					return err
				}
				req.UserData = string(data)
			}
			var err error
			if req.Labels, err = parseLabels("label", labels); err != nil {
				return err
			}
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				if err := resolveFlag(ctx, c.Pools.Resolve, &req.PoolID); err != nil {
					return err
				}
				inst, err := c.Instances.Create(ctx, req)
				if err != nil {
					return err
				}
				if !wait {
					return showOne(g, instanceView, inst)
				}
				goal := "running"
				if inst.Desired.Power == api.PowerOff {
					goal = "stopped"
				}
				return g.wait(c, inst.ID, goal, 15*time.Minute)
			})
		},
	}
	fl := create.Flags()
	fl.StringVar(&req.PoolID, "pool", "", "pool id or name")
	fl.StringVar(&req.Flavor, "flavor", "", "flavor name of the pool")
	fl.StringVar(&req.Image, "image", "", "image (default: the flavor's)")
	fl.StringVar(&req.Name, "name", "", "name (hostname; unique in the pool; default: the instance id)")
	fl.StringVar(&userDataFile, "user-data-file", "", "cloud-init user data file")
	fl.StringArrayVar(&req.SSHKeys, "ssh-key", nil, "OpenSSH public key (repeatable)")
	fl.StringArrayVar(&labels, "label", nil, "label KEY=VALUE (repeatable)")
	fl.StringVar((*string)(&req.Power), "power", "", "on (default) or off")
	fl.StringVar(&req.IdempotencyKey, "idempotency-key", "", "a repeated create with this key answers the same instance")
	fl.BoolVar(&wait, "wait", false, "wait until the instance runs (or is stopped, with --power off), showing progress (as instances wait)")

	var lreq api.InstanceListRequest
	list := &cobra.Command{
		Use:   "list",
		Short: "List instances (one page), optionally of one pool or phase, or matching a label selector (-l)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				if err := resolveFlag(ctx, c.Pools.Resolve, &lreq.PoolID); err != nil {
					return err
				}
				page, err := c.Instances.List(ctx, lreq)
				if err != nil {
					return err
				}
				return show(g, instanceView, page, page.Items, page.NextCursor)
			})
		},
	}
	list.Flags().StringVar(&lreq.PoolID, "pool", "", "only this pool (id or name)")
	list.Flags().StringVar((*string)(&lreq.Phase), "phase", "",
		"only this phase (Pending, Provisioning, Running, Stopped, Reinstalling, Deleting, Failed)")
	list.Flags().StringVarP(&lreq.Selector, "selector", "l", "",
		"label selector: env=prod, env!=dev, 'tier in (web,db)', 'tier notin (db)', backup, !backup; ',' is AND")
	list.Flags().IntVar(&lreq.Limit, "limit", 0, "page size (default 100, max 1000)")
	list.Flags().StringVar(&lreq.Cursor, "cursor", "", "nextCursor of the previous page")

	power := &cobra.Command{
		Use:   "power ID|NAME ACTION",
		Short: "Power action: on, off, graceful-off, reset, cycle, graceful-restart, nmi",
		Args:  exactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error {
				inst, err := c.Instances.Power(ctx, id, api.PowerAction(args[1]))
				if err != nil {
					return err
				}
				return showOne(g, instanceView, inst)
			})
		},
	}
	reinstall := &cobra.Command{
		Use:   "reinstall ID|NAME IMAGE",
		Short: "Reinstall an instance with another image (keeps its id)",
		Args:  exactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error {
				inst, err := c.Instances.Reinstall(ctx, id, args[1])
				if err != nil {
					return err
				}
				return showOne(g, instanceView, inst)
			})
		},
	}
	var waitDelete bool
	del := &cobra.Command{
		Use:   "delete ID|NAME",
		Short: "Delete an instance: its machine, then its record",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error {
				inst, err := c.Instances.Delete(ctx, id)
				if err != nil {
					return err
				}
				if !waitDelete {
					return showOne(g, instanceView, inst)
				}
				return g.wait(c, id, "deleted", 15*time.Minute)
			})
		},
	}
	del.Flags().BoolVar(&waitDelete, "wait", false,
		"wait until the machine and the record are gone, showing progress (as instances wait --for deleted)")

	var until string
	var maxWait time.Duration
	waitCmd := &cobra.Command{
		Use:   "wait ID|NAME",
		Short: "Wait until an instance is running (or --for stopped|deleted), showing progress",
		Long: "Waits until the instance is running (or --for stopped|deleted), printing a progress line per\n" +
			"change on stderr and the instance on stdout at the end. Ctrl-C stops only the waiting (exit\n" +
			"status 130): the instance goes on, and the line printed says how to wait again.",
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if _, ok := waitGoals[until]; !ok {
				return fmt.Errorf("--for %q: want running, stopped or deleted", until)
			}
			return g.onInstance(args[0], func(_ context.Context, c *client.Client, id string) error {
				return g.wait(c, id, until, maxWait)
			})
		},
	}
	waitCmd.Flags().StringVar(&until, "for", "running", "running, stopped or deleted")
	waitCmd.Flags().DurationVar(&maxWait, "max", 15*time.Minute, "give up after this long")

	watch := &cobra.Command{
		Use:   "watch [ID|NAME]",
		Short: "Follow instance events live (all instances of the tenant without an instance) until Ctrl-C",
		Long: "Prints one line per event (time, instance, type, phase, message); -o json prints each event as\n" +
			"one line of JSON.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return g.withClient(func(ctx context.Context, c *client.Client) error { return g.watch(ctx, c, "") })
			}
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error { return g.watch(ctx, c, id) })
		},
	}
	get := &cobra.Command{
		Use:   "get ID|NAME",
		Short: "Show an instance with its status",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error {
				inst, err := c.Instances.Get(ctx, id)
				if err != nil {
					return err
				}
				return showInstance(g, inst)
			})
		},
	}
	c.AddCommand(create, list, power, reinstall, del, waitCmd, watch, get, updateCmd(g))
	c.AddCommand(accessCmds(g)...)
	c.AddCommand(metricsCmd(g))
	instancePoolFlags(g, c)
	return c
}

// showInstance prints inst as showOne does; the tables add its conditions
// and its last operation below its row.
func showInstance(g *globals, inst api.Instance) error {
	format, err := g.format()
	if err != nil {
		return err
	}
	if err := showOne(g, instanceView, inst); err != nil || format != formatTable && format != formatWide {
		return err
	}
	if len(inst.Status.Conditions) > 0 {
		fmt.Fprintln(g.out)
		if err := writeTable(g.out, conditionView.columns, inst.Status.Conditions, format == formatWide); err != nil {
			return err
		}
	}
	if op := inst.Status.LastOperation; op != nil {
		fmt.Fprintf(g.out, "\nLast operation:  %s %s %s (%s)\n", op.Action, op.State, timestamp(op.StartedAt), cell(op.Message))
	}
	return nil
}

// onInstance runs fn with a client and the id of the instance handle
// names (an id, or the name of one instance of the tenant, or of the pool
// --pool names: instance names are unique per pool). A name several
// pools hold is refused listing the ids, and saying --pool picks one.
func (g *globals) onInstance(handle string, fn func(ctx context.Context, c *client.Client, id string) error) error {
	return g.withClient(func(ctx context.Context, c *client.Client) error {
		pool := g.instancePool
		if err := resolveFlag(ctx, c.Pools.Resolve, &pool); err != nil {
			return err
		}
		id, err := c.Instances.ResolveIn(ctx, pool, handle)
		if ce := api.AsComputeError(err); ce != nil && len(ce.Details.Candidates) > 0 && pool == "" {
			ce.Message += "; or name its pool with --pool"
		}
		if err != nil {
			return err
		}
		return fn(ctx, c, id)
	})
}

// instancePoolFlags gives every subcommand of instances that takes an
// instance ID|NAME the --pool flag onInstance resolves names in.
func instancePoolFlags(g *globals, instances *cobra.Command) {
	for _, sub := range instances.Commands() {
		if strings.Contains(sub.Use, "ID|NAME") {
			sub.Flags().StringVar(&g.instancePool, "pool", "",
				"the pool (id or name) of the instance NAME: instance names are unique per pool, not per tenant")
		}
	}
}

// waitGoals are the goals of `instances wait --for`, by name.
var waitGoals = map[string]client.Goal{
	"running": client.Running,
	"stopped": client.Stopped,
	"deleted": client.Deleted,
}

// wait waits (client Wait) until the instance reaches the goal named until
// (a waitGoals key), printing one progress line per change of phase,
// machine state or condition on stderr and the instance at the end (none
// for deleted). Ctrl-C ends it with an exitError (status 130) saying how
// to wait again; maxWait with an error naming the last progress line.
func (g *globals) wait(c *client.Client, id, until string, maxWait time.Duration) error {
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(sig, maxWait)
	defer cancel()
	start, last := time.Now(), ""
	inst, err := c.Instances.Wait(ctx, id, waitGoals[until], func(inst *api.Instance, getErr error) {
		if line := progressLine(inst, getErr); line != last {
			fmt.Fprintf(os.Stderr, "%6.1fs  %s\n", time.Since(start).Seconds(), line)
			last = line
		}
	})
	switch {
	case sig.Err() != nil:
		return &exitError{status: 130,
			msg: fmt.Sprintf("interrupted: instance %s goes on; wait again with: %s instances wait %s --for %s", id, selfName(), id, until)}
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("gave up after %s; last: %s", maxWait, last)
	case err != nil:
		return err
	case until == "deleted":
		return nil
	}
	return showOne(g, instanceView, inst)
}

func progressLine(inst *api.Instance, getErr error) string {
	if getErr != nil {
		if api.IsCode(getErr, api.CodeNotFound) {
			return "deleted"
		}
		return "waiting: " + getErr.Error()
	}
	parts := []string{inst.ID, string(inst.Status.Phase)}
	if m := inst.Status.Machine; m != nil {
		parts = append(parts, "machine "+m.ID+" "+string(m.State))
		if len(m.Addresses) > 0 {
			parts = append(parts, strings.Join(m.Addresses, ","))
		}
	}
	if p := client.Problem(inst); p != "" {
		parts = append(parts, "("+p+")")
	}
	return strings.Join(parts, "  ")
}

// watch prints the events of instance id ("" for all) until Ctrl-C: one
// line each, or one line of JSON each with -o json or yaml (a stream of
// events, not one document).
func (g *globals) watch(ctx context.Context, c *client.Client, id string) error {
	format, err := g.format()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	events, err := c.Instances.Watch(ctx, id)
	if err != nil {
		return err
	}
	what := "every instance"
	if id != "" {
		what = "instance " + id
	}
	fmt.Fprintln(os.Stderr, "watching the events of", what, "(Ctrl-C to stop)")
	enc := json.NewEncoder(g.out)
	for ev := range events {
		if format == formatJSON || format == formatYAML {
			if err := enc.Encode(ev); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(g.out, "%s  %s  %-12s %s %s\n", ev.Time.Local().Format(time.TimeOnly), ev.ResourceID, ev.Type, ev.Phase, ev.Message)
	}
	if ctx.Err() == nil { // not Ctrl-C: the connection closed
		return api.Errorf(api.CodeUnavailable, "the NATS connection closed (credential revoked?): no more events")
	}
	return nil
}
