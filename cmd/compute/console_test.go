package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
)

// `compute up --console-addr` serves the console's sign-in page there.
func TestUpServesTheConsole(t *testing.T) {
	s, err := startStack(upOptions{dataDir: t.TempDir(), natsHost: "127.0.0.1", hetznerAddr: "127.0.0.1:0", proxmoxAddr: "127.0.0.1:0",
		console: consoleConfig{addr: "127.0.0.1:0"}, services: serviceConfig{log: zerolog.Nop(), resyncInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get(s.console.URL() + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `<form method="post" action="/signin"`) {
		t.Fatalf("GET /signin: %s\n%s", resp.Status, body)
	}
}

// A taken --console-addr stops `compute up` before anything starts, naming
// the flag; an empty one stops `compute serve console`.
func TestConsoleAddrRefusals(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	out, status := runCompute(t, "up", "--data", t.TempDir(), "--nats-port", "0", "--hetzner-addr", "127.0.0.1:0",
		"--proxmox-addr", "127.0.0.1:0", "--console-addr", taken.Addr().String())
	want := fmt.Sprintf("error: port %s is in use: is another `compute up` running? (web console; --console-addr picks another)\n", port)
	if status != 1 || out != want {
		t.Fatalf("compute up: exit status %d, output:\n%s\nwant exit status 1 and the one line\n%s", status, out, want)
	}
	root := newRootWith(io.Discard)
	root.SetArgs([]string{"serve", "console", "--console-addr", ""})
	err = root.Execute()
	if ce := api.AsComputeError(err); ce.Code != api.CodeInvalidConfig || ce.Path() != "--console-addr" {
		t.Fatalf("serve console --console-addr '': %v, want INVALID_CONFIG naming --console-addr", err)
	}
}

// withoutConsole splits the console off the services serve starts.
func TestWithoutConsole(t *testing.T) {
	for _, c := range []struct {
		in      []string
		rest    []string
		console bool
	}{
		{[]string{"console"}, []string{}, true},
		{[]string{"accounts", "console", "secrets"}, []string{"accounts", "secrets"}, true},
		{[]string{"reconciler"}, []string{"reconciler"}, false},
	} {
		rest, console := withoutConsole(c.in)
		if fmt.Sprint(rest) != fmt.Sprint(c.rest) || console != c.console {
			t.Errorf("withoutConsole(%v) = %v, %v; want %v, %v", c.in, rest, console, c.rest, c.console)
		}
	}
}
