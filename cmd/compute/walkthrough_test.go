package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/natsauth"
)

// cli runs compute commands in-process against a stack, as tenant acme
// (or tenant, when set).
type cli struct {
	t      *testing.T
	url    string
	tenant string
	// creds is the credentials file the commands connect with ("" none).
	creds   string
	replies []string
}

func (c *cli) run(stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	root := newRootWith(&out)
	tenant := c.tenant
	if tenant == "" {
		tenant = "acme"
	}
	global := []string{"--nats", c.url, "--tenant", tenant}
	if c.creds != "" {
		global = append(global, "--creds", c.creds)
	}
	root.SetArgs(append(global, args...))
	root.SetIn(strings.NewReader(stdin))
	err := root.Execute()
	c.replies = append(c.replies, out.String())
	return out.String(), err
}

// must runs a command that must succeed and decodes its JSON reply.
func (c *cli) must(v any, stdin string, args ...string) {
	c.t.Helper()
	out, err := c.run(stdin, args...)
	if err != nil {
		c.t.Fatalf("compute %s: %v", strings.Join(args, " "), err)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			c.t.Fatalf("compute %s: reply %q: %v", strings.Join(args, " "), out, err)
		}
	}
}

// startTestCLI starts a stack and a cli on it as tenant acme.
func startTestCLI(t *testing.T) (*stack, *cli) {
	t.Helper()
	s, _ := startTestStack(t, &bustest.LogBuffer{})
	return s, &cli{t: t, url: s.nats.ClientURL(), creds: s.tenantCreds(t, "acme")}
}

// tenantCreds creates tenant through the stack's tenants API (as `compute
// up` does for demo) and returns the file of a credential of scope
// compute:admin.
func (s *stack) tenantCreds(t *testing.T, tenant string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), tenant+".creds")
	if err := ensureTenant(s.nc, tenant, file); err != nil {
		t.Fatal(err)
	}
	return file
}

// adminCreds is the file of the stack's admin credential.
func (s *stack) adminCreds(dataDir string) string {
	return filepath.Join(dataDir, upAuthDir, natsauth.CredsDir, natsauth.UserAdmin+".creds")
}

// hetznerPool stores a token, registers a hetzner-cloud account with it
// and makes a pool with flavor small (cx23, ubuntu-24.04), each called name.
func (c *cli) hetznerPool(name string) (api.Secret, api.Account, api.Pool) {
	c.t.Helper()
	var sec api.Secret
	c.must(&sec, name+"-token\n", "secrets", "put", name)
	var acct api.Account
	c.must(&acct, "", "accounts", "create", "--provider", "hetzner-cloud", "--name", name, "--set", "token="+sec.Ref)
	var pool api.Pool
	c.must(&pool, "", "pools", "create", "--account", acct.ID, "--name", name, "--flavor", "small=cx23:ubuntu-24.04")
	return sec, acct, pool
}

func startTestStack(t *testing.T, logs *bustest.LogBuffer) (*stack, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := startStack(upOptions{dataDir: dir, natsHost: "127.0.0.1", hetznerAddr: "127.0.0.1:0", proxmoxAddr: "127.0.0.1:0",
		services: serviceConfig{log: zerolog.New(logs).Level(zerolog.DebugLevel), resyncInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, dir
}

// The README walkthrough, through the CLI and the bus, against the emulator.
func TestWalkthrough(t *testing.T) {
	const token = "hcloud-e2e-token-7f3c9a1d5e"
	logs := &bustest.LogBuffer{}
	s, dataDir := startTestStack(t, logs)
	c := &cli{t: t, url: s.nats.ClientURL(), creds: s.tenantCreds(t, "acme")}
	emu := s.hetzner.Emulator()

	var secret api.Secret
	c.must(&secret, token+"\n", "secrets", "put", "hcloud")
	if !regexp.MustCompile(`^secret://acme/sec_[0-9a-z]{26}$`).MatchString(secret.Ref) || secret.Name != "hcloud" || secret.TenantID != "acme" {
		t.Fatalf("secret: %+v", secret)
	}

	var acct api.Account
	c.must(&acct, "", "accounts", "create", "--provider", "hetzner-cloud", "--name", "prod", "--set", "token="+secret.Ref)
	if acct.Provider != "hetzner-cloud" || acct.Version != 1 || acct.Config["token"] != secret.Ref || acct.Config["location"] != "fsn1" {
		t.Fatalf("account: %+v", acct)
	}

	var offers api.List[api.Offer]
	c.must(&offers, "", "accounts", "offers", acct.ID, "--min-vcpu", "4")
	ids := map[string]api.Offer{}
	for _, o := range offers.Items {
		if o.Vcpu < 4 || o.Region != "fsn1" || o.Currency != "EUR" || o.PricePerHour == nil || *o.PricePerHour <= 0 {
			t.Fatalf("offer out of the query: %+v", o)
		}
		ids[o.ID] = o
	}
	if o, ok := ids["cx33"]; !ok || o.Vcpu != 4 || o.MemoryGiB != 8 || o.DiskGiB != 80 {
		t.Fatalf("cx33 missing or wrong in offers: %+v", ids)
	}

	var pool api.Pool
	c.must(&pool, "", "pools", "create", "--account", acct.ID, "--name", "web", "--flavor", "small=cx23:ubuntu-24.04")
	if pool.Class != api.PoolClassProvider || pool.Agent != api.PoolAgentNone || len(pool.Flavors) != 1 || pool.Flavors[0].OfferID != "cx23" {
		t.Fatalf("pool: %+v", pool)
	}

	var inst api.Instance
	c.must(&inst, "", "instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "web-1", "--wait")
	if inst.Status.Phase != api.PhaseRunning || inst.Status.Machine == nil || inst.Status.Machine.State != api.StateRunning || len(inst.Status.Machine.Addresses) == 0 {
		t.Fatalf("instance after wait: %+v", inst.Status)
	}
	servers := emu.Servers()
	if len(servers) != 1 {
		t.Fatalf("emulator holds %d servers, want 1", len(servers))
	}
	srv := servers[0]
	if srv.Name != "web-1" || srv.ServerType != "cx23" || srv.Image != "ubuntu-24.04" || srv.Location != "fsn1" ||
		srv.Labels["better-compute.io/managed"] != "true" || srv.Labels["better-compute.io/idempotency-key"] != inst.ID {
		t.Fatalf("server: %+v", srv)
	}
	if inst.Status.Machine.ID != jsonNumber(srv.ID) {
		t.Fatalf("instance names machine %s, emulator has %d", inst.Status.Machine.ID, srv.ID)
	}

	var listed api.List[api.Instance]
	c.must(&listed, "", "instances", "list")
	if len(listed.Items) != 1 || listed.Items[0].ID != inst.ID {
		t.Fatalf("list: %+v", listed.Items)
	}

	c.must(nil, "", "instances", "delete", inst.ID, "--wait")
	if _, err := c.run("", "instances", "get", inst.ID); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if n := len(emu.Servers()); n != 0 {
		t.Fatalf("emulator holds %d servers after delete", n)
	}

	bustest.AssertNowhere(t, bustest.Scan{NC: s.nc, Dirs: []string{dataDir}, Logs: logs.String(), Replies: c.replies}, token)
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

// readmeWalkthrough is the sh block of the README's CLI walkthrough.
func readmeWalkthrough(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Walkthrough with the `compute` CLI")
	if ok {
		_, section, ok = strings.Cut(section, "```sh\n")
	}
	if ok {
		section, _, ok = strings.Cut(section, "```")
	}
	if !ok {
		t.Fatal("README.md has no sh block under \"## Walkthrough with the `compute` CLI\"")
	}
	return section
}

// The README walkthrough exactly as written, run twice in a row by bash
// against one stack (its NATS URL swapped in, bin/compute this test binary,
// make a no-op): each run acts only on what its own commands made, never
// on an instance that was there before it.
func TestREADMEWalkthroughTwice(t *testing.T) {
	const readmeURL, readmeToken = "nats://127.0.0.1:4222", "my-hetzner-token"
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the README with")
	}
	script := readmeWalkthrough(t)
	if !strings.Contains(script, readmeURL) || !strings.Contains(script, readmeToken) {
		t.Fatalf("the walkthrough no longer uses %s and %s: update this test", readmeURL, readmeToken)
	}
	logs := &bustest.LogBuffer{}
	s, dataDir := startTestStack(t, logs)
	script = strings.ReplaceAll(script, readmeURL, s.nats.ClientURL())
	emu := s.hetzner.Emulator()

	work := t.TempDir()
	for path, body := range map[string]string{
		"bin/compute": "#!/bin/sh\n" + runMainEnv + "=1 exec '" + os.Args[0] + "' \"$@\"\n",
		"tools/make":  "#!/bin/sh\nexit 0\n",
	} {
		path = filepath.Join(work, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// An instance the tenant had before (to the second run, the first run's
	// instance is one too): the walkthrough must leave it as it is.
	c := &cli{t: t, url: s.nats.ClientURL(), tenant: "demo", creds: s.demoCreds}
	// the README's credential: the demo tenant's, where `compute up` writes it
	readmeCreds, err := os.ReadFile(s.demoCreds)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "data", "creds"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "data", "creds", "demo.creds"), readmeCreds, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, pool := c.hetznerPool("older")
	var older api.Instance
	c.must(&older, "", "instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "db-1", "--wait")
	olderServer := emu.Servers()[0]

	for run := 1; run <= 2; run++ {
		cmd := exec.Command(bash, "-euo", "pipefail", "-c", script)
		cmd.Dir = work
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "COMPUTE_") { // the README sets its own
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "PATH="+filepath.Join(work, "tools")+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("walkthrough run %d: %v\nstdout:\n%s\nstderr:\n%s", run, err, stdout.String(), stderr.String())
		}
		c.replies = append(c.replies, stdout.String(), stderr.String())

		var now api.Instance
		c.must(&now, "", "instances", "get", older.ID)
		if now.Generation != older.Generation || !reflect.DeepEqual(now.Desired, older.Desired) || now.Status.Phase != api.PhaseRunning {
			t.Fatalf("run %d changed the older instance: desired %+v generation %d phase %s, was %+v %d",
				run, now.Desired, now.Generation, now.Status.Phase, older.Desired, older.Generation)
		}
		var listed api.List[api.Instance]
		c.must(&listed, "", "instances", "list")
		if len(listed.Items) != 1 || listed.Items[0].ID != older.ID {
			t.Fatalf("after run %d the tenant has %d instances, want only the older one", run, len(listed.Items))
		}
		// Each run created its own server and deleted it; the older one runs on.
		if got := emu.Calls("POST /servers"); got != 1+run {
			t.Fatalf("after run %d: %d server creates, want %d", run, got, 1+run)
		}
		servers := emu.Servers()
		if len(servers) != 1 || servers[0].ID != olderServer.ID || servers[0].Status != "running" {
			t.Fatalf("after run %d the emulator holds %+v, want only the older server %d running", run, servers, olderServer.ID)
		}
	}
	bustest.AssertNowhere(t, bustest.Scan{NC: s.nc, Dirs: []string{dataDir}, Logs: logs.String(), Replies: c.replies}, readmeToken)
}
