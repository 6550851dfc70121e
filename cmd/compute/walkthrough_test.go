package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
)

// cli runs compute commands in-process against a stack, as tenant acme.
type cli struct {
	t       *testing.T
	url     string
	replies []string
}

func (c *cli) run(stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	root := newRootWith(&out)
	root.SetArgs(append([]string{"--nats", c.url, "--tenant", "acme"}, args...))
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

func startTestStack(t *testing.T, logs *bustest.LogBuffer) (*stack, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := startStack(upOptions{dataDir: dir, natsHost: "127.0.0.1", hetznerAddr: "127.0.0.1:0", proxmoxAddr: "127.0.0.1:0",
		services: serviceConfig{log: zerolog.New(logs).Level(zerolog.DebugLevel), envTenants: []string{"root"}, resyncInterval: -1}})
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
	c := &cli{t: t, url: s.nats.ClientURL()}
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
