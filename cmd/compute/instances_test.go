package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
