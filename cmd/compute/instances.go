package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

func instancesCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "instances", Short: "Instances: machines the reconciler keeps as declared"}
	var req api.InstanceCreateRequest
	var userDataFile string
	var wait bool
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create an instance in a pool",
		Example: `  compute instances create --pool pool_01… --flavor small --name web-1 --wait`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if userDataFile != "" {
				data, err := os.ReadFile(userDataFile)
				if err != nil {
					return err
				}
				req.UserData = string(data)
			}
			if !wait {
				return g.request(bus.ResourceInstances, "create", req, nil)
			}
			var inst api.Instance
			if err := g.request(bus.ResourceInstances, "create", req, &inst); err != nil {
				return err
			}
			goal := "running"
			if inst.Desired.Power == api.PowerOff {
				goal = "stopped"
			}
			return g.wait(inst.ID, goal, 15*time.Minute)
		},
	}
	fl := create.Flags()
	fl.StringVar(&req.PoolID, "pool", "", "pool id")
	fl.StringVar(&req.Flavor, "flavor", "", "flavor name of the pool")
	fl.StringVar(&req.Image, "image", "", "image (default: the flavor's)")
	fl.StringVar(&req.Name, "name", "", "name (hostname; default: the instance id)")
	fl.StringVar(&userDataFile, "user-data-file", "", "cloud-init user data file")
	fl.StringArrayVar(&req.SSHKeys, "ssh-key", nil, "OpenSSH public key (repeatable)")
	fl.StringVar((*string)(&req.Power), "power", "", "on (default) or off")
	fl.StringVar(&req.IdempotencyKey, "idempotency-key", "", "a repeated create with this key answers the same instance")
	fl.BoolVar(&wait, "wait", false, "wait until the instance runs (or is stopped, with --power off), showing progress (as instances wait)")

	var lreq api.InstanceListRequest
	list := &cobra.Command{
		Use:   "list",
		Short: "List instances (one page), optionally of one pool or phase",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return g.request(bus.ResourceInstances, "list", lreq, nil) },
	}
	list.Flags().StringVar(&lreq.PoolID, "pool", "", "only this pool")
	list.Flags().StringVar((*string)(&lreq.Phase), "phase", "",
		"only this phase (Pending, Provisioning, Running, Stopped, Reinstalling, Deleting, Failed)")
	list.Flags().IntVar(&lreq.Limit, "limit", 0, "page size (default 100, max 1000)")
	list.Flags().StringVar(&lreq.Cursor, "cursor", "", "nextCursor of the previous page")

	power := &cobra.Command{
		Use:   "power ID ACTION",
		Short: "Power action: on, off, graceful-off, reset, cycle, graceful-restart, nmi",
		Args:  exactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.request(bus.ResourceInstances, "power", api.InstancePowerRequest{ID: args[0], Action: api.PowerAction(args[1])}, nil)
		},
	}
	reinstall := &cobra.Command{
		Use:   "reinstall ID IMAGE",
		Short: "Reinstall an instance with another image (keeps its id)",
		Args:  exactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.request(bus.ResourceInstances, "reinstall", api.InstanceReinstallRequest{ID: args[0], Image: args[1]}, nil)
		},
	}
	var waitDelete bool
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete an instance: its machine, then its record",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if !waitDelete {
				return g.request(bus.ResourceInstances, "delete", api.IDRequest{ID: args[0]}, nil)
			}
			if err := g.request(bus.ResourceInstances, "delete", api.IDRequest{ID: args[0]}, &api.Instance{}); err != nil {
				return err
			}
			return g.wait(args[0], "deleted", 15*time.Minute)
		},
	}
	del.Flags().BoolVar(&waitDelete, "wait", false,
		"wait until the machine and the record are gone, showing progress (as instances wait --for deleted)")

	var until string
	var maxWait time.Duration
	waitCmd := &cobra.Command{
		Use:   "wait ID",
		Short: "Wait until an instance is running (or --for stopped|deleted), showing progress",
		Long: "Waits until the instance is running (or --for stopped|deleted), printing a progress line per\n" +
			"change on stderr and the instance on stdout at the end. Ctrl-C stops only the waiting (exit\n" +
			"status 130): the instance goes on, and the line printed says how to wait again.",
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if _, ok := waitGoals[until]; !ok {
				return fmt.Errorf("--for %q: want running, stopped or deleted", until)
			}
			return g.wait(args[0], until, maxWait)
		},
	}
	waitCmd.Flags().StringVar(&until, "for", "running", "running, stopped or deleted")
	waitCmd.Flags().DurationVar(&maxWait, "max", 15*time.Minute, "give up after this long")

	watch := &cobra.Command{
		Use:   "watch [ID]",
		Short: "Follow instance events live (all instances of the tenant without ID) until Ctrl-C",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id := "*"
			if len(args) == 1 {
				id = args[0]
			}
			return g.watch(id)
		},
	}
	c.AddCommand(create, list, power, reinstall, del, waitCmd, watch,
		idCmd(g, bus.ResourceInstances, "get", "Show an instance with its status"))
	c.AddCommand(accessCmds(g)...)
	return c
}

// waitGoal decides from a get whether waiting is over (done) or hopeless (err).
type waitGoal func(inst *api.Instance, getErr error) (done bool, err error)

// waitGoals are the goals of `instances wait --for`, by name.
var waitGoals = map[string]waitGoal{
	"running": phaseGoal(api.PhaseRunning),
	"stopped": phaseGoal(api.PhaseStopped),
	"deleted": func(inst *api.Instance, getErr error) (bool, error) {
		if api.IsCode(getErr, api.CodeNotFound) {
			return true, nil
		}
		return false, failedErr(inst, getErr)
	},
}

func phaseGoal(phase api.Phase) waitGoal {
	return func(inst *api.Instance, getErr error) (bool, error) {
		if getErr != nil {
			return false, getErr
		}
		if inst.Status.Phase == phase && inst.Status.ObservedGeneration == inst.Generation {
			return true, nil
		}
		return false, failedErr(inst, nil)
	}
}

func failedErr(inst *api.Instance, getErr error) error {
	if getErr != nil && !api.IsCode(getErr, api.CodeUnavailable) {
		return getErr
	}
	if getErr == nil && inst.Status.Phase == api.PhaseFailed && inst.Status.ObservedGeneration == inst.Generation {
		return fmt.Errorf("instance %s failed: %s", inst.ID, conditionText(inst))
	}
	return nil
}

// wait polls the instance every second (events wake it sooner) until the
// goal named until (a waitGoals key) is reached, and prints one progress
// line per change of phase, machine state or condition. Ctrl-C ends it with
// an exitError (status 130) saying how to wait again.
func (g *globals) wait(id, until string, maxWait time.Duration) error {
	goal := waitGoals[until]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	interrupted := func() error {
		return &exitError{status: 130,
			msg: fmt.Sprintf("interrupted: instance %s goes on; wait again with: %s instances wait %s --for %s", id, selfName(), id, until)}
	}
	nc, err := g.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	wake := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(bus.Event(g.tenant, bus.ResourceInstances, id, "*"), wake)
	if err == nil {
		defer func() { _ = sub.Unsubscribe() }()
	}
	start, last := time.Now(), ""
	deadline := time.After(maxWait)
	for {
		var inst api.Instance
		getErr := g.call(ctx, nc, bus.ResourceInstances, "get", api.IDRequest{ID: id}, &inst)
		if ctx.Err() != nil {
			return interrupted()
		}
		if line := progressLine(&inst, getErr); line != last {
			fmt.Fprintf(os.Stderr, "%6.1fs  %s\n", time.Since(start).Seconds(), line)
			last = line
		}
		done, err := goal(&inst, getErr)
		if err != nil {
			return err
		}
		if done {
			if getErr == nil {
				return g.print(&inst)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return interrupted()
		case <-wake:
		case <-time.After(time.Second):
		case <-deadline:
			return fmt.Errorf("gave up after %s; last: %s", maxWait, last)
		}
	}
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
	if c := conditionText(inst); c != "" {
		parts = append(parts, "("+c+")")
	}
	return strings.Join(parts, "  ")
}

func conditionText(inst *api.Instance) string {
	for _, c := range inst.Status.Conditions {
		if c.Problem() {
			text := string(c.Reason) + ": " + c.Message
			if c.RetryAt != nil {
				text += ", retry at " + c.RetryAt.Format(time.TimeOnly)
			}
			return text
		}
	}
	return ""
}

// watch prints one line per instance event until interrupted.
func (g *globals) watch(id string) error {
	nc, err := g.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	msgs := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(bus.Event(g.tenant, bus.ResourceInstances, id, "*"), msgs)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	fmt.Fprintln(os.Stderr, "watching", sub.Subject, "(Ctrl-C to stop)")
	for {
		select {
		case <-stop:
			return nil
		case m := <-msgs:
			var ev api.Event
			if json.Unmarshal(m.Data, &ev) != nil {
				continue
			}
			fmt.Fprintf(g.out, "%s  %s  %-12s %s %s\n", ev.Time.Local().Format(time.TimeOnly), ev.ResourceID, ev.Type, ev.Phase, ev.Message)
		}
	}
}
