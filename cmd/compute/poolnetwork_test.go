package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
)

// --network-file and --placement-file read the pool's network and
// placement into the request, after --access-file; an unknown field is
// refused naming the file.
func TestPoolNetworkFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	network := write("network.json", `{"privateNetworks":[{"network":"backend","ipRange":"10.0.1.0/24"}],"firewalls":["web"],"publicIPv4":false}`)
	placement := write("placement.json", `{"spread":true,"locations":["fsn1","nbg1"]}`)
	access := write("access.json", `{"user":"root"}`)
	bad := write("bad.json", `{"spread":true,"zone":"x"}`)
	run := func(args ...string) (*api.PoolCreateRequest, error) {
		var req api.PoolCreateRequest
		cmd := &cobra.Command{Use: "create", RunE: func(*cobra.Command, []string) error { return nil }}
		accessFileFlag(cmd, &req)
		poolNetworkFlags(cmd, &req)
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		return &req, cmd.Execute()
	}
	req, err := run("--network-file", network, "--placement-file", placement, "--access-file", access)
	switch {
	case err != nil:
		t.Fatal(err)
	case req.Network == nil || len(req.Network.PrivateNetworks) != 1 || req.Network.PrivateNetworks[0].IPRange != "10.0.1.0/24" ||
		req.Network.PublicIPv4 == nil || *req.Network.PublicIPv4 || req.Network.PublicIPv6 != nil:
		t.Fatalf("network = %+v", req.Network)
	case req.Placement == nil || !req.Placement.Spread || len(req.Placement.Locations) != 2:
		t.Fatalf("placement = %+v", req.Placement)
	case req.Access == nil || req.Access.User != "root":
		t.Fatalf("access = %+v (the access file's PreRunE must still run)", req.Access)
	}
	if _, err := run("--placement-file", bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "zone") {
		t.Fatalf("bad file: %v", err)
	}
}
