package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
)

// --access-file reads the pool's access into the request; an unknown
// field is refused naming the file.
func TestAccessFileFlag(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "access.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"user":"root","privateKey":"secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz","configure":{"hook":"bootstrap"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"user":"root","passphrase":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(file string) (*api.PoolCreateRequest, error) {
		var req api.PoolCreateRequest
		cmd := &cobra.Command{Use: "create", RunE: func(*cobra.Command, []string) error { return nil }}
		accessFileFlag(cmd, &req)
		cmd.SetArgs([]string{"--access-file", file})
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		return &req, cmd.Execute()
	}
	req, err := run(good)
	if err != nil || req.Access == nil || req.Access.User != "root" || req.Access.Configure == nil || req.Access.Configure.Hook != "bootstrap" {
		t.Fatalf("good file: %+v, %v", req.Access, err)
	}
	if _, err := run(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "passphrase") {
		t.Fatalf("bad file: %v", err)
	}
}
