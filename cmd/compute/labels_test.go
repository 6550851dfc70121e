package main

import (
	"maps"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// Labels through the CLI: create --label, list -l, the LABELS column of
// -o wide, update --label and --clear-labels; a malformed flag is refused
// before anything is sent.
func TestCLILabels(t *testing.T) {
	_, c := startTestCLI(t)
	_, _, pool := c.hetznerPool("web")
	var inst api.Instance
	c.must(&inst, "", "instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "web-1",
		"--label", "env=prod", "--label", "backup=", "--wait")
	if want := map[string]string{"env": "prod", "backup": ""}; !maps.Equal(inst.Labels, want) {
		t.Fatalf("created with labels %v, want %v", inst.Labels, want)
	}
	var other api.Instance
	c.must(&other, "", "instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "web-2", "--label", "env=dev")
	for selector, want := range map[string]string{"env=prod": inst.ID, "env in (dev)": other.ID, "!backup": other.ID} {
		var page api.List[api.Instance]
		c.must(&page, "", "instances", "list", "-l", selector)
		if len(page.Items) != 1 || page.Items[0].ID != want {
			t.Errorf("list -l %q answered %d instances, want only %s", selector, len(page.Items), want)
		}
	}
	wide, err := c.run("", "instances", "list", "--selector", "env=prod", "-o", "wide")
	if err != nil || !strings.Contains(wide, "LABELS") || !strings.Contains(wide, "backup=,env=prod") {
		t.Errorf("list -o wide = %q (%v), want a LABELS column with backup=,env=prod", wide, err)
	}
	if _, err := c.run("", "instances", "list", "-l", "env in (prod"); !api.IsCode(err, api.CodeInvalidInput) {
		t.Errorf("list with a malformed selector: %v, want INVALID_INPUT", err)
	}
	var updated api.Instance
	c.must(&updated, "", "instances", "update", "web-1", "--label", "env=staging")
	if updated.Generation != inst.Generation+1 || !maps.Equal(updated.Labels, map[string]string{"env": "staging"}) {
		t.Errorf("update --label answered generation %d labels %v", updated.Generation, updated.Labels)
	}
	var cleared api.Instance
	c.must(&cleared, "", "instances", "update", "web-1", "--clear-labels")
	if len(cleared.Labels) != 0 || cleared.Generation != updated.Generation+1 {
		t.Errorf("update --clear-labels left %v at generation %d", cleared.Labels, cleared.Generation)
	}
	if _, err := c.run("", "instances", "update", "web-1", "--label", "novalue"); err == nil ||
		!strings.Contains(err.Error(), "KEY=VALUE") {
		t.Errorf("update --label novalue: %v, want a KEY=VALUE refusal", err)
	}
	if _, err := c.run("", "instances", "update", "web-1"); err == nil || !strings.Contains(err.Error(), "nothing to change") {
		t.Errorf("update without changes: %v", err)
	}
}
