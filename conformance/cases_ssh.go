package conformance

import (
	"errors"
	"strings"
	"time"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
)

// sshWait bounds the wait for a new running machine to answer SSH (a real
// one boots its sshd after the provider reports it running).
const sshWait = 3 * time.Minute

// sshTarget is how to reach machine m with the subject's login, pinned to
// hostKey ("" for a first contact).
func (c *check) sshTarget(m *api.ExternalMachine, hostKey string) access.Target {
	addr := access.Address(m, 0, false)
	if addr == "" {
		c.Fatalf("running machine %s reports no address to reach over SSH", m.ID)
	}
	user, key := c.r.s.SSH.Login()
	return access.Target{Address: addr, User: user, Key: key, PinnedHostKey: hostKey}
}

// sshRun runs cmd on t, waiting (up to sshWait) while the machine does not
// answer yet. Errors: access's, other than ErrUnreachable before the wait
// is over.
func (c *check) sshRun(t access.Target, cmd access.Command) (access.Result, error) {
	deadline := time.Now().Add(sshWait)
	for {
		ctx, cancel := c.callCtx()
		res, err := access.Run(ctx, t, cmd)
		cancel()
		if !errors.Is(err, access.ErrUnreachable) || time.Now().After(deadline) || c.ctx.Err() != nil {
			return res, err
		}
		time.Sleep(time.Second)
	}
}

// step is the command of a configure or drain step with script, as the
// reconciler sends it, for machine m at generation 1.
func step(script string, m *api.ExternalMachine) access.Command {
	return access.StepCommand(&api.AccessStep{Script: script}, m.ID, 1, 0)
}

func sshConfigure(c *check) {
	m := c.runningMachine()
	start := time.Now()
	res, err := c.sshRun(c.sshTarget(m, ""),
		step("echo configured $COMPUTE_INSTANCE_ID generation $COMPUTE_GENERATION args $1 $2", m))
	if err != nil {
		c.Fatalf("configure step on machine %s: %v", m.ID, err)
	}
	c.Metric("configuredAfterMs", float64(time.Since(start).Milliseconds()))
	want := "configured " + m.ID + " generation 1 args " + m.ID + " 1\n"
	if res.ExitCode != 0 || res.Stdout != want || res.TimedOut || res.HostKey == "" {
		c.Errorf("configure step answered exit %d, stdout %q, timed out %v, host key %q; want exit 0, stdout %q and a host key",
			res.ExitCode, res.Stdout, res.TimedOut, res.HostKey, want)
	}
	res, err = c.sshRun(c.sshTarget(m, res.HostKey), step("exit 3", m))
	if err != nil || res.ExitCode != 3 {
		c.Errorf("a step exiting 3 answered exit %d (%v)", res.ExitCode, err)
	}
}

func sshDrain(c *check) {
	m := c.runningMachine()
	first, err := c.sshRun(c.sshTarget(m, ""), step("echo drain $1", m))
	if err != nil || first.ExitCode != 0 || first.Stdout != "drain "+m.ID+"\n" {
		c.Fatalf("drain step on machine %s: exit %d, stdout %q (%v)", m.ID, first.ExitCode, first.Stdout, err)
	}
	res, err := c.sshRun(c.sshTarget(m, first.HostKey), step("echo draining\nfalse\necho never", m))
	if err != nil || res.ExitCode != 1 || res.Stdout != "draining\n" {
		c.Errorf("a failing drain step answered exit %d, stdout %q (%v); want exit 1, stdout %q", res.ExitCode, res.Stdout, err, "draining\n")
	}
	target := c.sshTarget(m, first.HostKey)
	if err := c.del(m.ID); err != nil {
		c.Fatalf("delete %s: %v", m.ID, err)
	}
	c.waitAbsent(m.ID)
	ctx, cancel := c.callCtx()
	defer cancel()
	if res, err := access.Run(ctx, target, step("true", m)); err == nil {
		c.Errorf("machine %s answered SSH after it was deleted (exit %d)", m.ID, res.ExitCode)
	}
}

func sshHostKeyPinning(c *check) {
	m := c.runningMachine()
	first, err := c.sshRun(c.sshTarget(m, ""), step("true", m))
	if err != nil || first.HostKey == "" {
		c.Fatalf("first contact with machine %s: %v", m.ID, err)
	}
	again, err := c.get(m.ID)
	if err != nil || again == nil {
		c.Fatalf("get %s: %v", m.ID, err)
	}
	pinned := c.sshTarget(again, first.HostKey)
	if res, err := c.sshRun(pinned, step("true", m)); err != nil || res.HostKey != first.HostKey {
		c.Errorf("second contact with machine %s presented %q (%v), first %q", m.ID, res.HostKey, err, first.HostKey)
	}
	ctx, cancel := c.callCtx()
	err = c.r.s.SSH.ChangeHostKey(ctx, m.ID)
	cancel()
	if errors.Is(err, ErrNotSupported) {
		c.Incompletef("the SSH hook cannot change a host key")
	}
	if err != nil {
		c.Fatalf("change the host key of machine %s: %v", m.ID, err)
	}
	res, err := c.sshRun(pinned, step("echo ran", m))
	switch {
	case !errors.Is(err, access.ErrHostKeyChanged):
		c.Errorf("a connection pinned to %s after the key changed answered %v, want the host key refused", first.HostKey, err)
	case strings.Contains(res.Stdout, "ran"):
		c.Errorf("a refused connection ran the command")
	case res.HostKey == first.HostKey || res.HostKey == "":
		c.Errorf("the refused connection reports host key %q, want the new one", res.HostKey)
	}
}
