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
	"better-compute.io/compute/pkg/api"
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
	m.SetDown(true)
	if _, err := run(t, tg, access.Command{Line: "true"}, 5*time.Second); !errors.Is(err, access.ErrUnreachable) {
		t.Fatalf("down: %v", err)
	}
	m.SetDown(false)
	if res, err := run(t, tg, access.Command{Line: "true"}, 5*time.Second); err != nil || res.ExitCode != 0 {
		t.Fatalf("up again: %+v, %v", res, err)
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

// Address: the emulators' endpoint wins; a machine of a pool with a
// network is reached at its first private address (a Hetzner server
// lists public IPv4, public IPv6, then its private network addresses),
// falling back to the first address when it has none; other machines at
// their first address.
func TestAddressPrefersPrivateWhenThePoolHasANetwork(t *testing.T) {
	hetzner := []string{"203.0.113.7", "2001:db8:1::1", "10.0.1.5", "10.0.2.9"}
	for _, tc := range []struct {
		name    string
		m       *api.ExternalMachine
		port    int
		private bool
		want    string
	}{
		{"no machine", nil, 0, true, ""},
		{"no address", &api.ExternalMachine{Addresses: []string{}}, 0, true, ""},
		{"emulator endpoint", &api.ExternalMachine{SSHEndpoint: "127.0.0.1:40001", Addresses: hetzner}, 22, true, "127.0.0.1:40001"},
		{"no network: first address", &api.ExternalMachine{Addresses: hetzner}, 0, false, "203.0.113.7:22"},
		{"network: first private address", &api.ExternalMachine{Addresses: hetzner}, 2222, true, "10.0.1.5:2222"},
		{"network, no private address", &api.ExternalMachine{Addresses: []string{"2001:db8:1::1", "203.0.113.7"}}, 0, true, "[2001:db8:1::1]:22"},
		{"network: unique local IPv6", &api.ExternalMachine{Addresses: []string{"2001:db8:1::1", "fd00::5"}}, 0, true, "[fd00::5]:22"},
		{"network: 192.168/16 after a public one", &api.ExternalMachine{Addresses: []string{"198.51.100.1", "192.168.10.20"}}, 0, true, "192.168.10.20:22"},
		{"network: a malformed address is skipped", &api.ExternalMachine{Addresses: []string{"198.51.100.1", "not-an-ip", "172.16.0.3"}}, 0, true, "172.16.0.3:22"},
	} {
		if got := access.Address(tc.m, tc.port, tc.private); got != tc.want {
			t.Errorf("%s: Address = %q, want %q", tc.name, got, tc.want)
		}
	}
}
