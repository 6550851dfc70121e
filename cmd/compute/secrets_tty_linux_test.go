package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"better-compute.io/compute/pkg/bus/bustest"
)

// openPTY opens a pseudo-terminal: the master side the test types into and
// reads the screen from, and the terminal the command gets.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, tty
}

// `secrets put` on a terminal prompts for the value and does not echo it.
func TestSecretsPutPromptsOnATerminal(t *testing.T) {
	const value = "typed-secret-4b1d9e"
	s, _ := startTestStack(t, &bustest.LogBuffer{})
	master, tty := openPTY(t)
	defer func() { _ = master.Close() }()
	var screen bustest.LogBuffer // what the terminal shows
	copied := make(chan struct{})
	go func() { defer close(copied); _, _ = io.Copy(&screen, master) }()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "--nats", s.nats.ClientURL(), "--tenant", "acme", "--creds", s.tenantCreds(t, "acme"),
		"secrets", "put", "hcloud")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var reply bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &reply, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const prompt = "Value of secret hcloud (not echoed): "
	bustest.WaitFor(t, "the prompt", func() bool { return strings.Contains(screen.String(), prompt) })
	bustest.WaitFor(t, "echo off", func() bool {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		return err == nil && tio.Lflag&unix.ECHO == 0
	})
	if _, err := master.WriteString(value + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("secrets put: %v; terminal:\n%s", err, screen.String())
	}
	_ = tty.Close()
	<-copied
	if strings.Contains(screen.String(), value) || strings.Contains(reply.String(), value) {
		t.Fatalf("the value was shown: terminal %q, reply %q", screen.String(), reply.String())
	}
	if !strings.Contains(reply.String(), `"ref": "secret://acme/sec_`) {
		t.Fatalf("reply %q, want the secret's reference", reply.String())
	}
}

// Without -o, replies to a terminal print as tables.
func TestOutputTableOnATerminal(t *testing.T) {
	master, tty := openPTY(t)
	defer func() { _ = master.Close(); _ = tty.Close() }()
	g := &globals{out: tty}
	if f, err := g.format(); f != formatTable || err != nil {
		t.Fatalf("default format on a terminal: %q %v, want table", f, err)
	}
}
