package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/bus/bustest"
)

// readmeSection is the first sh block under the README heading.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), heading)
	if ok {
		_, section, ok = strings.Cut(section, "```sh\n")
	}
	if ok {
		section, _, ok = strings.Cut(section, "```")
	}
	if !ok {
		t.Fatalf("README.md has no sh block under %q", heading)
	}
	return section
}

// The README's Hetzner Robot block exactly as written, run twice by bash
// against one stack (its NATS URL swapped in, bin/compute this test
// binary): server 321 is claimed, installed and released each time; 322
// and 323 are never touched; no webservice password and no private key
// reaches a reply, log or store.
func TestREADMERobotWalkthroughTwice(t *testing.T) {
	const readmeURL, readmePass = "nats://127.0.0.1:4222", "my-robot-password"
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the README with")
	}
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("no ssh-keygen to run the README with")
	}
	script := readmeSection(t, "## Dedicated servers (Hetzner Robot)")
	if !strings.Contains(script, readmeURL) || !strings.Contains(script, readmePass) {
		t.Fatalf("the block no longer uses %s and %s: update this test", readmeURL, readmePass)
	}
	logs := &bustest.LogBuffer{}
	s, dataDir := startTestStack(t, logs)
	script = strings.ReplaceAll(script, readmeURL, s.nats.ClientURL())
	emu := s.robot.Emulator()
	work := t.TempDir()
	bin := filepath.Join(work, "bin", "compute")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+runMainEnv+"=1 exec '"+os.Args[0]+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	creds, err := os.ReadFile(s.demoCreds)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "data", "creds"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "data", "creds", "demo.creds"), creds, 0o600); err != nil {
		t.Fatal(err)
	}
	var replies []string
	for run := 1; run <= 2; run++ {
		cmd := exec.Command(bash, "-euo", "pipefail", "-c", script)
		cmd.Dir = work
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "COMPUTE_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("robot block run %d: %v\nstdout:\n%s\nstderr:\n%s\nRobot calls:\n%s", run, err, stdout.String(), stderr.String(),
				strings.Join(emu.Calls(), "\n"))
		}
		replies = append(replies, stdout.String(), stderr.String())
		if !strings.Contains(stdout.String(), `"step": "Ready"`) {
			t.Fatalf("run %d printed no Ready bootstrap:\n%s", run, stdout.String())
		}
		if name, ok := emu.Installed(321); !ok || name != "bm-321" {
			t.Fatalf("after run %d server 321 holds %q (complete %v)", run, name, ok)
		}
		for _, srv := range emu.Servers() {
			want := map[int]string{321: "", 322: "", 323: "db-primary"}[srv.Number]
			if srv.Name != want {
				t.Fatalf("after run %d server %d is named %q, want %q (released, untouched)", run, srv.Number, srv.Name, want)
			}
		}
	}
	for _, c := range emu.Calls() {
		if strings.Contains(c, "/322") || strings.Contains(c, "/323") || strings.Contains(c, "cancellation") {
			t.Fatalf("a call reached another server or cancelled: %s", c)
		}
	}
	key, err := os.ReadFile(filepath.Join(work, "data", "robot-key"))
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.Split(strings.TrimSpace(string(key)), "\n")[1] // a line of the private key
	bustest.AssertNowhere(t, bustest.Scan{NC: s.nc, Dirs: []string{dataDir}, Logs: logs.String(), Replies: replies}, readmePass, secret)
}
