package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

// Ctrl-C during a wait stops only the waiting: the command says the
// instance goes on and how to wait again, and exits 130.
func TestWaitInterrupted(t *testing.T) {
	s, c := startTestCLI(t)
	_, _, pool := c.hetznerPool("web")
	var inst api.Instance
	c.must(&inst, "", "instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "web-1", "--wait")

	// It runs: waiting for it to stop waits until interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "--nats", s.nats.ClientURL(), "--tenant", "acme", "--creds", c.creds, "instances", "wait", inst.ID, "--for", "stopped")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	if !lines.Scan() || !strings.Contains(lines.Text(), inst.ID+"  Running") {
		t.Fatalf("first progress line %q, want the instance running", lines.Text())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	want := fmt.Sprintf("interrupted: instance %s goes on; wait again with: compute instances wait %s --for stopped", inst.ID, inst.ID)
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || len(rest) != 1 || rest[0] != want {
		t.Fatalf("after Ctrl-C: %v, output %q; want exit status 130 and the one line %q", err, rest, want)
	}
	var now api.Instance
	c.must(&now, "", "instances", "get", inst.ID)
	if now.Status.Phase != api.PhaseRunning || now.Desired.Power != inst.Desired.Power {
		t.Fatalf("instance after an interrupted wait: %+v", now)
	}
}

// A wait's progress line names a problem condition, never one that says
// all went well (configure exited 0, a drain, a resize, a placement).
func TestProgressLine(t *testing.T) {
	machine := &api.ExternalMachine{ID: "42", State: api.StateRunning, Addresses: []string{"192.0.2.1"}}
	ok := []api.Condition{
		{Type: api.ConditionReady, Status: api.ConditionTrue, Reason: api.ReasonConverged},
		{Type: api.ConditionConfigured, Status: api.ConditionTrue, Reason: api.ReasonStepSucceeded, Message: "configure exited 0"},
		{Type: api.ConditionDrained, Status: api.ConditionTrue, Reason: api.ReasonStepSucceeded, Message: "drain exited 0"},
	}
	retry := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	failing := append(slices.Clone(ok), api.Condition{Type: api.ConditionProviderError, Status: api.ConditionTrue,
		Reason: "RATE_LIMITED", Message: "slow down", RetryAt: &retry})
	cases := []struct {
		inst api.Instance
		err  error
		want string
	}{
		{api.Instance{ID: "inst_1", Status: api.InstanceStatus{Phase: api.PhaseRunning, Machine: machine, Conditions: ok}}, nil,
			"inst_1  Running  machine 42 running  192.0.2.1"},
		{api.Instance{ID: "inst_1", Status: api.InstanceStatus{Phase: api.PhaseProvisioning, Conditions: failing}}, nil,
			"inst_1  Provisioning  (RATE_LIMITED: slow down, retry at 03:04:05)"},
		{api.Instance{}, api.Errorf(api.CodeNotFound, "gone"), "deleted"},
		{api.Instance{}, api.Errorf(api.CodeUnavailable, "no reply"), "waiting: UNAVAILABLE: no reply"},
	}
	for _, c := range cases {
		if got := progressLine(&c.inst, c.err); got != c.want {
			t.Errorf("progressLine = %q, want %q", got, c.want)
		}
	}
}

// --wait -o id prints the id alone on stdout (for X=$(…)), its progress on
// stderr: instances create here, accounts bootstrap in the README's Robot
// walkthrough.
func TestWaitProgressGoesToStderr(t *testing.T) {
	s, c := startTestCLI(t)
	_, _, pool := c.hetznerPool("web")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "--nats", s.nats.ClientURL(), "--tenant", "acme", "--creds", c.creds,
		"instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "web-1", "--wait", "-o", "id")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("create --wait -o id: %v\n%s", err, stderr.String())
	}
	id := strings.TrimSuffix(stdout.String(), "\n")
	if !api.ValidID(api.PrefixInstance, id) || stdout.String() != id+"\n" {
		t.Fatalf("stdout %q, want an instance id and a newline", stdout.String())
	}
	if !strings.Contains(stderr.String(), id+"  Running") {
		t.Fatalf("stderr %q has no progress line of %s", stderr.String(), id)
	}
}
