package main

import (
	"io"
	"strings"
	"testing"
)

// A bad --proxmox-allowed-networks stops serve and up before they connect,
// naming the flag and the entry.
func TestProxmoxAllowedNetworksFlag(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "provider-proxmox", "--nats", "nats://127.0.0.1:1"},
		{"up", "--data", t.TempDir()},
	} {
		root := newRootWith(io.Discard)
		root.SetArgs(append(args, "--proxmox-allowed-networks", "10.0.0.0/8,pve1.example.net"))
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), "--proxmox-allowed-networks") || !strings.Contains(err.Error(), `"pve1.example.net"`) {
			t.Errorf("%s with a host name in the allowed networks: %v", args[0], err)
		}
	}
	c := &serviceConfig{proxmoxAllowed: "10.0.0.0/8, 192.0.2.7"}
	if err := c.parseEgress(); err != nil || c.proxmoxEgress == nil || len(c.proxmoxEgress.Allowed) != 2 {
		t.Fatalf("parseEgress = %v, policy %+v", err, c.proxmoxEgress)
	}
}
