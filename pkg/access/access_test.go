package access_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/sshemu"
)

func machine(t *testing.T) (*sshemu.Machine, access.Target) {
	t.Helper()
	f := sshemu.NewFleet(zerolog.Nop())
	t.Cleanup(f.Close)
	m, err := f.Start("m1")
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return m, access.Target{Address: m.Endpoint(), User: "root", Key: signer}
}

func run(t *testing.T, tg access.Target, cmd access.Command, timeout time.Duration) (access.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return access.Run(ctx, tg, cmd)
}

func TestRunScriptPinsAndRecords(t *testing.T) {
	m, tg := machine(t)
	m.SetProgram("bootstrap", sshemu.Response{Stdout: "joined\n", Stderr: "warn\n"})
	res, err := run(t, tg, access.Command{Line: "sh -s -- inst_1 3", Stdin: "export GEN=$2\necho id $1 gen $GEN\nbootstrap\n"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stdout != "id inst_1 gen 3\njoined\n" || res.Stderr != "warn\n" || res.Truncated || res.TimedOut {
		t.Fatalf("result %+v", res)
	}
	if want := ssh.FingerprintSHA256(m.HostKey()); res.HostKey != want {
		t.Fatalf("host key %s, want %s", res.HostKey, want)
	}
	runs := m.Runs()
	if len(runs) != 1 || runs[0].Env["GEN"] != "3" || runs[0].User != "root" || runs[0].ClientKey != ssh.FingerprintSHA256(tg.Key.PublicKey()) {
		t.Fatalf("runs %+v", runs)
	}
}

func TestRunExitCodeAndTruncation(t *testing.T) {
	m, tg := machine(t)
	m.SetProgram("big", sshemu.Response{Stdout: strings.Repeat("x", 100) + "END", Exit: 7})
	res, err := run(t, tg, access.Command{Line: "big", Limit: 10}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 || res.Stdout != "xxxxxxxEND" || !res.Truncated {
		t.Fatalf("result %+v", res)
	}
	res, err = run(t, tg, access.Command{Line: "nosuch"}, 5*time.Second)
	if err != nil || res.ExitCode != 127 || !strings.Contains(res.Stderr, "nosuch: not found") {
		t.Fatalf("result %+v, %v", res, err)
	}
}

func TestRunRefusesChangedHostKey(t *testing.T) {
	m, tg := machine(t)
	tg.PinnedHostKey = ssh.FingerprintSHA256(m.HostKey())
	if _, err := run(t, tg, access.Command{Line: "true"}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.ChangeHostKey(); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, tg, access.Command{Line: "true"}, 5*time.Second)
	if !errors.Is(err, access.ErrHostKeyChanged) || res.HostKey == tg.PinnedHostKey || res.HostKey == "" {
		t.Fatalf("err %v, result %+v", err, res)
	}
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d runs; the refused connection ran something", n)
	}
}

func TestRunHangTimesOutAndDropFails(t *testing.T) {
	m, tg := machine(t)
	m.SetProgram("hang", sshemu.Response{Hang: true})
	m.SetProgram("drop", sshemu.Response{Drop: true})
	res, err := run(t, tg, access.Command{Line: "hang"}, 300*time.Millisecond)
	if err != nil || !res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("hang: %+v, %v", res, err)
	}
	if _, err := run(t, tg, access.Command{Line: "drop"}, 5*time.Second); !errors.Is(err, access.ErrDropped) {
		t.Fatalf("drop: %v", err)
	}
	m.Stop()
	if _, err := run(t, tg, access.Command{Line: "true"}, 5*time.Second); !errors.Is(err, access.ErrUnreachable) {
		t.Fatalf("stopped: %v", err)
	}
}

func TestRunServesLogs(t *testing.T) {
	m, tg := machine(t)
	m.SetLog(sshemu.LogJournal, []string{"a", "b", "c"})
	res, err := run(t, tg, access.Command{Line: "journalctl --no-pager -n 2"}, 5*time.Second)
	if err != nil || res.Stdout != "b\nc\n" {
		t.Fatalf("%+v, %v", res, err)
	}
	res, err = run(t, tg, access.Command{Line: "tail -n 1 /var/log/cloud-init-output.log"}, 5*time.Second)
	if err != nil || !strings.Contains(res.Stdout, "finished") {
		t.Fatalf("%+v, %v", res, err)
	}
}
