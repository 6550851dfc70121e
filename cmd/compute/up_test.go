package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
)

// hostPort is the host:port of a URL.
func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// `compute up` with one of its ports taken (by another `compute up`, or by
// anything) says so in one line and exits 1; it never panics.
func TestUpWithAPortTaken(t *testing.T) {
	running, _ := startTestStack(t, &bustest.LogBuffer{})
	natsAddr := hostPort(t, running.nats.ClientURL())
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	takenAddr := taken.Addr().String()
	port := func(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }
	free := "127.0.0.1:0"
	cases := []struct {
		name                   string
		natsPort, hetzner, pve string
		want                   string
	}{
		{"a second compute up", port(natsAddr), hostPort(t, running.hetzner.URL()), hostPort(t, running.proxmox.URL()),
			fmt.Sprintf("error: port %s is in use: is another `compute up` running? (NATS; --nats-port picks another)", port(natsAddr))},
		{"NATS port taken", port(takenAddr), free, free,
			fmt.Sprintf("error: port %s is in use: is another `compute up` running? (NATS; --nats-port picks another)", port(takenAddr))},
		{"Hetzner emulator port taken", "0", takenAddr, free,
			fmt.Sprintf("error: port %s is in use: is another `compute up` running? (Hetzner Cloud API emulator; --hetzner-addr picks another)", port(takenAddr))},
		{"Proxmox emulator port taken", "0", free, takenAddr,
			fmt.Sprintf("error: port %s is in use: is another `compute up` running? (Proxmox VE API emulator; --proxmox-addr picks another)", port(takenAddr))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, status := runCompute(t, "up", "--data", t.TempDir(), "--nats-port", tc.natsPort,
				"--hetzner-addr", tc.hetzner, "--proxmox-addr", tc.pve, "--console-addr", free)
			if status != 1 || out != tc.want+"\n" {
				t.Fatalf("compute up: exit status %d, output:\n%s\nwant exit status 1 and the one line\n%s", status, out, tc.want)
			}
		})
	}
}

// A second `compute up` on a data directory in use (other ports) refuses
// in one line and exits 1: two stacks on one store would both reconcile
// its instances.
func TestUpRefusesADataDirectoryInUse(t *testing.T) {
	_, dir := startTestStack(t, &bustest.LogBuffer{})
	out, status := runCompute(t, "up", "--data", dir, "--nats-port", "0", "--hetzner-addr", "127.0.0.1:0", "--proxmox-addr", "127.0.0.1:0",
		"--metrics-addr", "127.0.0.1:0", "--console-addr", "127.0.0.1:0")
	want := fmt.Sprintf("error: data directory %s is in use by another `compute up` (--data picks another)\n", dir)
	if status != 1 || out != want {
		t.Fatalf("compute up: exit status %d, output:\n%s\nwant exit status 1 and the one line\n%s", status, out, want)
	}
}

// The embedded NATS of `compute up` has no TLS (its traffic, resolved
// secret values included, would cross the network in clear), so
// --nats-host takes loopback addresses only; any other is INVALID_INPUT
// naming the flag.
func TestCheckNATSHost(t *testing.T) {
	cases := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1", true},
		{"127.0.0.2", true},
		{"::1", true},
		{"localhost", true},
		{"0.0.0.0", false},
		{"::", false},
		{"", false},
		{"192.168.1.10", false},
		{"10.0.0.1", false},
		{"example.com", false},
		{"localhost.example.com", false},
	}
	for _, tc := range cases {
		err := checkNATSHost(tc.host)
		if tc.ok {
			if err != nil {
				t.Errorf("%q: %v, want accepted", tc.host, err)
			}
			continue
		}
		var ce *api.ComputeError
		if !errors.As(err, &ce) || ce.Code != api.CodeInvalidInput || ce.Path() != "--nats-host" ||
			!strings.Contains(ce.Message, "has no TLS") {
			t.Errorf("%q: %v, want INVALID_INPUT at --nats-host saying it has no TLS", tc.host, err)
		}
	}
}

// compute up refuses a non-loopback --nats-host before it starts anything.
func TestUpRefusesANonLoopbackNATSHost(t *testing.T) {
	dir := t.TempDir()
	out, status := runCompute(t, "up", "--data", dir, "--nats-host", "0.0.0.0", "--nats-port", "0",
		"--hetzner-addr", "127.0.0.1:0", "--proxmox-addr", "127.0.0.1:0")
	want := "error: INVALID_INPUT: --nats-host \"0.0.0.0\" is not a loopback address"
	if status != 1 || !strings.HasPrefix(out, want) || !strings.Contains(out, "(field: --nats-host)") {
		t.Fatalf("compute up: exit status %d, output:\n%s\nwant exit status 1 and %s… (field: --nats-host)", status, out, want)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("data directory after the refusal: %v %v, want it untouched", entries, err)
	}
}
