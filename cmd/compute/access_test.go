package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
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

// compute instances exec and logs against the stack's Hetzner emulator,
// whose machines answer SSH: a pool with access (its key put with
// secrets put), an instance that waits until running and configured,
// an exec by name printing exit code and output, the journal's last
// line, and INVALID_STATE once the machine is stopped. The key reaches
// no reply, log or store.
func TestInstancesExecAndLogs(t *testing.T) {
	logs := &bustest.LogBuffer{}
	s, dataDir := startTestStack(t, logs)
	c := &cli{t: t, url: s.nats.ClientURL(), creds: s.tenantCreds(t, "acme")}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(block))
	pemLines := strings.Split(strings.TrimSpace(keyPEM), "\n") // the leak scan looks for the body on one line too
	var key, token api.Secret
	c.must(&key, keyPEM, "secrets", "put", "platform-ssh")
	c.must(&token, "exec-test-token\n", "secrets", "put", "hcloud")
	var acct api.Account
	c.must(&acct, "", "accounts", "create", "--provider", "hetzner-cloud", "--name", "prod", "--set", "token="+token.Ref)
	file := filepath.Join(t.TempDir(), "access.json")
	if err := os.WriteFile(file, []byte(`{"user":"root","privateKey":"`+key.Ref+`","configure":{"script":"echo configured $COMPUTE_INSTANCE_ID"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var pool api.Pool
	c.must(&pool, "", "pools", "create", "--account", acct.ID, "--name", "hosts", "--flavor", "small=cx23:ubuntu-24.04", "--access-file", file)
	var inst api.Instance
	c.must(&inst, "", "instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "host-1", "--wait")
	if cfg := inst.Status.Access; inst.Status.Phase != api.PhaseRunning || cfg == nil || cfg.Configure == nil ||
		cfg.Configure.State != api.StepSucceeded || cfg.Configure.OutputTail != "configured "+inst.ID+"\n" {
		t.Fatalf("instance after --wait: phase %s, access %+v", inst.Status.Phase, cfg)
	}

	var out api.InstanceExecReply
	c.must(&out, "", "instances", "exec", "host-1", "--", "echo", "hello", "world")
	if out != (api.InstanceExecReply{Stdout: "hello world\n"}) {
		t.Fatalf("exec echo: %+v", out)
	}
	// compute exits with the command's exit code, after printing the reply.
	reply, err := c.run("", "instances", "exec", inst.ID, "--command-timeout", "5s", "--", "exit", "3")
	var ee *exitError
	if !errors.As(err, &ee) || ee.status != 3 || ee.msg != "" {
		t.Fatalf("exec exit 3 ended with %v, want exit status 3 and no message", err)
	}
	if err := json.Unmarshal([]byte(reply), &out); err != nil || out.ExitCode != 3 || out.TimedOut {
		t.Fatalf("exec exit 3: %+v (%v)", out, err)
	}
	var lines api.InstanceLogsReply
	c.must(&lines, "", "instances", "logs", "host-1", "--source", "journal", "--lines", "1")
	if lines.Source != api.LogSourceJournal || len(lines.Lines) != 1 || !strings.Contains(lines.Lines[0], "multi-user.target") {
		t.Fatalf("logs: %+v", lines)
	}
	if _, err := c.run("", "instances", "logs", "host-1", "--source", "dmesg"); api.AsComputeError(err).Path() != "source" {
		t.Fatalf("logs --source dmesg: %v", err)
	}

	c.must(nil, "", "instances", "power", inst.ID, "off")
	c.must(nil, "", "instances", "wait", inst.ID, "--for", "stopped")
	if _, err := c.run("", "instances", "exec", inst.ID, "--", "true"); !api.IsCode(err, api.CodeInvalidState) {
		t.Fatalf("exec on a stopped machine: %v", err)
	}
	bustest.AssertNowhere(t, bustest.Scan{NC: s.nc, Dirs: []string{dataDir}, Logs: logs.String(), Replies: c.replies},
		strings.TrimSpace(keyPEM), strings.Join(pemLines[1:len(pemLines)-1], ""), string(priv.Seed()))
}

// execStatus: compute instances exec exits as ssh does, 124 on a timeout.
func TestExecStatus(t *testing.T) {
	for _, tc := range []struct {
		reply api.InstanceExecReply
		want  int
	}{
		{api.InstanceExecReply{}, 0},
		{api.InstanceExecReply{ExitCode: 1}, 1},
		{api.InstanceExecReply{ExitCode: 255}, 255},
		{api.InstanceExecReply{ExitCode: -1, TimedOut: true}, 124},
		{api.InstanceExecReply{ExitCode: 0, TimedOut: true}, 124},
		{api.InstanceExecReply{ExitCode: -1}, 255},
		{api.InstanceExecReply{ExitCode: 300}, 255},
	} {
		if got := execStatus(tc.reply); got != tc.want {
			t.Errorf("execStatus(%+v) = %d, want %d", tc.reply, got, tc.want)
		}
	}
}
