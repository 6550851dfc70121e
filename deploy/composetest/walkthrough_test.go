package composetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// walkthroughHeading names the README section whose first sh block is run.
const walkthroughHeading = "## Walkthrough with the `compute` CLI"

// readmeBlock is the first ```sh block after heading in the README.
func readmeBlock(s *stack, heading string) string {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.root, "README.md"))
	if err != nil {
		s.t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		s.t.Fatalf("README.md has no section %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		s.t.Fatalf("README.md section %q has no sh block", heading)
	}
	return block
}

// walkthrough runs the README walkthrough, as written, with bash from the
// repository root: it builds bin/compute on the host and drives the stack
// through 127.0.0.1:4222 with a credential of tenant demo. Afterwards the
// instance it made must be gone, from the store and from the emulator.
func walkthrough(s *stack, c *client) {
	s.t.Helper()
	// tenant demo's credential, minted through the tenants API, where the
	// README's (written by compute up) would be
	script := strings.ReplaceAll(readmeBlock(s, walkthroughHeading), readmeCreds, s.tenantCreds(c, "demo"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = s.root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COMPUTE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// the same flags as the image build, so the go build step hits the cache
	cmd.Env = append(cmd.Env, "COMPUTE_NATS_CA="+s.caFile(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("README walkthrough: %v\n%s", err, lastLines(string(out), 60))
	}
	// the instance's delete --wait ends with a "deleted" progress line;
	// the pool, account and secret deletes after it print their replies
	if !strings.Contains(string(out), `"phase": "Running"`) || !strings.Contains(string(out), "  deleted\n") {
		s.t.Fatalf("README walkthrough did not run and delete its instance:\n%s", lastLines(string(out), 60))
	}
	all, err := c.listAll("demo", time.Now().Add(time.Minute))
	if err != nil || len(all) != 0 {
		s.t.Fatalf("tenant demo after the walkthrough: %d instances, %v", len(all), err)
	}
	for _, srv := range emulatorServers(s.t) {
		if srv.Name == "web-1" {
			s.t.Fatalf("the walkthrough's server %d is still in the emulator (%s)", srv.ID, srv.Status)
		}
	}
}
