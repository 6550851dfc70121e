package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// Names stand for ids where they are unique in the tenant: pools and
// accounts by name, an instance by its name; a name two instances share
// (in two pools) is refused listing both ids; names taken in their scope
// are refused at create with ALREADY_EXISTS.
func TestCLINamesAsHandles(t *testing.T) {
	_, c := startTestCLI(t)
	_, acct, blue := c.hetznerPool("blue")
	var green api.Pool
	c.must(&green, "", "pools", "create", "--account", "blue", "--name", "green", "--flavor", "small=cx23:ubuntu-24.04")
	if green.ProviderAccountID != acct.ID {
		t.Fatalf("--account blue made a pool on %s, want %s", green.ProviderAccountID, acct.ID)
	}

	var web, db api.Instance
	c.must(&web, "", "instances", "create", "--pool", "blue", "--flavor", "small", "--name", "web-1", "--power", "off")
	c.must(&db, "", "instances", "create", "--pool", "green", "--flavor", "small", "--name", "db-1", "--power", "off")
	if web.PoolID != blue.ID || db.PoolID != green.ID {
		t.Fatalf("--pool by name: web-1 in %s, db-1 in %s; want %s, %s", web.PoolID, db.PoolID, blue.ID, green.ID)
	}
	var got api.Instance
	c.must(&got, "", "instances", "get", "db-1")
	if got.ID != db.ID {
		t.Fatalf("get db-1 answered %s, want %s", got.ID, db.ID)
	}
	out, err := c.run("", "instances", "get", "web-1", "-o", "id")
	if err != nil || out != web.ID+"\n" {
		t.Fatalf("get web-1 -o id: %q %v, want %s", out, err, web.ID)
	}

	// Taken names are refused where they must be unique.
	for _, args := range [][]string{
		{"instances", "create", "--pool", "blue", "--flavor", "small", "--name", "web-1"},
		{"pools", "create", "--account", "blue", "--name", "green", "--flavor", "small=cx23:ubuntu-24.04"},
		{"accounts", "create", "--provider", "hetzner-cloud", "--name", "blue", "--set", "token=" + acct.Config["token"].(string)},
	} {
		if _, err := c.run("", args...); !api.IsCode(err, api.CodeAlreadyExists) || api.AsComputeError(err).Path() != "name" {
			t.Errorf("compute %s: %v, want ALREADY_EXISTS at name", strings.Join(args, " "), err)
		}
	}

	// The same instance name in another pool is allowed, and makes the name ambiguous.
	var other api.Instance
	c.must(&other, "", "instances", "create", "--pool", "green", "--flavor", "small", "--name", "web-1", "--power", "off")
	_, err = c.run("", "instances", "get", "web-1")
	ce := api.AsComputeError(err)
	want := []string{web.ID, other.ID}
	slices.Sort(want)
	if ce == nil || ce.Code != api.CodeInvalidInput || !slices.Equal(ce.Details.Candidates, want) ||
		!strings.Contains(ce.Message, web.ID) || !strings.Contains(ce.Message, other.ID) {
		t.Fatalf("get of an ambiguous name: %v (details %+v), want INVALID_INPUT listing %v", err, ce, want)
	}
	if !strings.Contains(ce.Message, "--pool") {
		t.Errorf("the ambiguity %q does not say --pool picks one", ce.Message)
	}
	// --pool picks one where names are resolved: get, wait, delete.
	c.must(&got, "", "instances", "get", "web-1", "--pool", "green")
	if got.ID != other.ID {
		t.Fatalf("get web-1 --pool green answered %s, want %s", got.ID, other.ID)
	}
	c.must(&got, "", "instances", "wait", "web-1", "--pool", blue.ID, "--for", "stopped")
	if got.ID != web.ID || got.Status.Phase != api.PhaseStopped {
		t.Fatalf("wait web-1 --pool %s answered %s %s, want %s Stopped", blue.ID, got.ID, got.Status.Phase, web.ID)
	}
	c.must(&got, "", "instances", "delete", "web-1", "--pool", "green")
	if got.ID != other.ID {
		t.Fatalf("delete web-1 --pool green deleted %s, want %s", got.ID, other.ID)
	}
	if _, err := c.run("", "instances", "get", "web-1", "--pool", "nopool"); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("get with an unknown --pool: %v, want NOT_FOUND", err)
	}
	if _, err := c.run("", "instances", "get", "nobody"); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("get of an unknown name: %v, want NOT_FOUND", err)
	}
	// Ids keep working whatever the names.
	c.must(&got, "", "instances", "get", other.ID)
	if got.ID != other.ID {
		t.Fatalf("get by id answered %s", got.ID)
	}
	// An id with --pool of another pool is refused, and nothing is deleted.
	_, err = c.run("", "instances", "delete", web.ID, "--pool", "green")
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeNotFound || !strings.Contains(ce.Message, green.ID) {
		t.Fatalf("delete %s (of pool blue) --pool green: %v, want NOT_FOUND naming pool green", web.ID, err)
	}
	var kept api.Instance
	c.must(&kept, "", "instances", "get", web.ID, "--pool", "blue")
	if kept.ID != web.ID || kept.DeletionRequestedAt != nil {
		t.Fatalf("after a delete with the wrong --pool, get %s --pool blue answered %s (deletion requested %v)", web.ID, kept.ID, kept.DeletionRequestedAt)
	}
}

// On a live stack, -o table prints the stable columns and -o yaml the reply.
func TestCLITablesOnTheStack(t *testing.T) {
	_, c := startTestCLI(t)
	_, acct, _ := c.hetznerPool("web")
	out, err := c.run("", "accounts", "offers", "web", "--min-vcpu", "16", "-o", "table")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "ID ARCH VCPU MEMORY DISK PRICE/H PRICE/MONTH CURRENCY AVAILABLE" || len(lines) < 3 {
		t.Fatalf("offers table:\n%s", out)
	}
	var prev float64
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if f[1] != api.ArchAMD64 && f[1] != api.ArchARM64 {
			t.Fatalf("offer row %q: no architecture", l)
		}
		var p float64
		if _, err := fmt.Sscan(f[5], &p); err != nil || p < prev || f[7] != "EUR" {
			t.Fatalf("offers not sorted by price:\n%s", out)
		}
		prev = p
	}
	// --json: the raw list, in the provider's order.
	var raw api.List[api.Offer]
	c.must(&raw, "", "accounts", "offers", "web", "--min-vcpu", "16", "--json")
	if len(raw.Items) != len(lines)-1 {
		t.Fatalf("offers --json: %d offers, the table %d", len(raw.Items), len(lines)-1)
	}
	if _, err := c.run("", "accounts", "offers", "web", "--json", "-o", "table"); err == nil || !strings.Contains(err.Error(), "pick one") {
		t.Fatalf("offers --json -o table: %v, want refused", err)
	}
	placement := filepath.Join(t.TempDir(), "placement.json")
	if err := os.WriteFile(placement, []byte(`{"locations":["nbg1","fsn1"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var nbg api.Pool
	c.must(&nbg, "", "pools", "create", "--account", acct.ID, "--name", "web-nbg", "--flavor", "small=cx23:ubuntu-24.04",
		"--placement-file", placement)
	var forPool api.List[api.Offer]
	c.must(&forPool, "", "accounts", "offers", "web", "--pool", "web-nbg", "--min-vcpu", "16")
	if len(forPool.Items) == 0 || forPool.Items[0].Region != "nbg1" {
		t.Fatalf("offers for pool web-nbg = %+v, want them in nbg1, its first location", forPool.Items)
	}
	out, err = c.run("", "accounts", "get", acct.ID, "-o", "yaml")
	if err != nil || !strings.Contains(out, `id: "`+acct.ID+`"`) || !strings.Contains(out, `provider: "hetzner-cloud"`) {
		t.Fatalf("accounts get -o yaml: %v\n%s", err, out)
	}
	out, err = c.run("", "providers", "describe", "hetzner-cloud", "-o", "table")
	if err != nil || !strings.Contains(out, "Provider:      hetzner-cloud") || !regexpLine(out, `^token\s+secret\s+yes\s+yes\s`) {
		t.Fatalf("providers describe:\n%s %v", out, err)
	}
	out, err = c.run("", "providers", "list", "-o", "id")
	if err != nil || out != "hetzner-cloud\nhetzner-robot\nproxmox\n" {
		t.Fatalf("providers list -o id: %q %v", out, err)
	}
}

// regexpLine reports whether a line of out matches pattern.
func regexpLine(out, pattern string) bool {
	return regexp.MustCompile(`(?m)` + pattern).MatchString(out)
}
