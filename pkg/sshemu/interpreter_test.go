package sshemu_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/sshemu"
)

// A script runs line by line until a line exits non-zero or runs exit;
// every run is recorded with its script and exported environment.
func TestScriptStopsAtTheFirstFailureOrExit(t *testing.T) {
	f := sshemu.NewFleet(zerolog.Nop())
	t.Cleanup(f.Close)
	m, err := f.Start("7")
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewSignerFromKey(priv)
	target := access.Target{Address: m.Endpoint(), User: "admin", Key: key}
	for _, c := range []struct {
		script, stdout string
		exit           int
	}{
		{"echo a\nfalse\necho b\n", "a\n", 1},
		{"# comment\n\necho a\nexit 4\necho b\n", "a\n", 4},
		{"export X=1 Y=$1\necho $X ${Y} $2\n", "1 p q\n", 0},
		{"hostname\n", "7\n", 0},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := access.Run(ctx, target, access.Command{Line: "sh -s -- p q", Stdin: c.script})
		cancel()
		if err != nil || res.Stdout != c.stdout || res.ExitCode != c.exit {
			t.Errorf("script %q: exit %d, stdout %q (%v); want exit %d, stdout %q", c.script, res.ExitCode, res.Stdout, err, c.exit, c.stdout)
		}
	}
	runs := m.Runs()
	if len(runs) != 4 || runs[2].Env["Y"] != "p" || runs[2].Script == "" || runs[0].User != "admin" {
		t.Fatalf("runs %+v", runs)
	}
	f.Stop("7")
	if f.Machine("7") != nil {
		t.Fatal("a stopped machine is still in the fleet")
	}
}
