package proxmox

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// TestLabelTagMapping: every label maps to a valid PVE tag, and back to
// the label lower-cased (the mapping's one loss); tags that are no label
// tags read back as no labels.
func TestLabelTagMapping(t *testing.T) {
	for _, tc := range []struct {
		key, value, tag string
		back            [2]string
	}{
		{"env", "prod", "env+prod", [2]string{"env", "prod"}},
		{"backup", "", "backup+", [2]string{"backup", ""}},
		{"example.com/team", "web", "example.com+team+web", [2]string{"example.com/team", "web"}},
		{"Env", "Prod", "env+prod", [2]string{"env", "prod"}},
		{"a_b", "c.d-e", "a_b+c.d-e", [2]string{"a_b", "c.d-e"}},
		{"x.io/K-1", "V_2", "x.io+k-1+v_2", [2]string{"x.io/k-1", "v_2"}},
	} {
		tag := LabelTag(tc.key, tc.value)
		if tag != tc.tag {
			t.Errorf("LabelTag(%q, %q) = %q, want %q", tc.key, tc.value, tag, tc.tag)
		}
		if _, err := emulator.ParseTags(tag); err != nil {
			t.Errorf("tag %q is not a valid PVE tag: %v", tag, err)
		}
		if got := TagLabels(tag); !maps.Equal(got, map[string]string{tc.back[0]: tc.back[1]}) {
			t.Errorf("TagLabels(%q) = %v, want %s=%s", tag, got, tc.back[0], tc.back[1])
		}
	}
	for _, tags := range []string{"", "base;better-compute", "a+b+c+d", "+x", "-a+b", "a.+b"} {
		if got := TagLabels(tags); got != nil {
			t.Errorf("TagLabels(%q) = %v, want none", tags, got)
		}
	}
	if got := withLabelTags("base;env+dev;better-compute", map[string]string{"env": "prod", "Tier": "web"}); got != "base;better-compute;env+prod;tier+web" {
		t.Errorf("withLabelTags replaced the label tags as %q", got)
	}
}

// TestLabelsThroughBus: labels given at create become tags beside the
// template's and the better-compute tag, get and list report them back,
// and relabel replaces only the label tags.
func TestLabelsThroughBus(t *testing.T) {
	e := newEnv(t)
	r := providertest.Serve(t, e.def, e.clock, testSecrets)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := spec("inst-labels")
	s.Labels = map[string]string{"env": "prod", "example.com/team": "Web"}
	m, err := r.Create(ctx, e.acct, "inst_labels", s)
	if err != nil {
		t.Fatal(err)
	}
	readBack := map[string]string{"env": "prod", "example.com/team": "web"}
	if !maps.Equal(m.Labels, readBack) {
		t.Errorf("create answered labels %v, want %v", m.Labels, readBack)
	}
	vmid, _ := strconv.Atoi(m.ID)
	if tags := e.vm(t, vmid).Tags; !slices.Equal(tags, []string{"base", "better-compute", "env+prod", "example.com+team+web"}) {
		t.Errorf("the VM is tagged %v", tags)
	}
	got, err := r.Get(ctx, e.acct, m.ID)
	if err != nil || got == nil || !maps.Equal(got.Labels, readBack) {
		t.Fatalf("get = %+v, %v; want labels %v", got, err, readBack)
	}
	page, err := r.List(ctx, e.acct, "", 0)
	if err != nil || len(page.Items) != 1 || !maps.Equal(page.Items[0].Labels, readBack) {
		t.Fatalf("list = %+v, %v; want one machine with labels %v", page, err, readBack)
	}
	r.IdempotencyKey = "inst_labels"
	re, err := r.Relabel(ctx, e.acct, m.ID, map[string]string{"env": "staging"})
	if err != nil || !maps.Equal(re.Labels, map[string]string{"env": "staging"}) || re.State != api.StateRunning {
		t.Fatalf("relabel = %+v, %v; want running with env=staging", re, err)
	}
	if tags := e.vm(t, vmid).Tags; !slices.Equal(tags, []string{"base", "better-compute", "env+staging"}) {
		t.Errorf("after the relabel the VM is tagged %v", tags)
	}
	if _, err := r.Relabel(ctx, e.acct, m.ID, map[string]string{"-bad": ""}); !api.IsCode(err, api.CodeInvalidInput) {
		t.Errorf("relabel with an invalid key: %v, want INVALID_INPUT", err)
	}
	r.IdempotencyKey = "inst_other"
	if _, err := r.Relabel(ctx, e.acct, m.ID, map[string]string{}); !api.IsCode(err, api.CodeNotFound) {
		t.Errorf("relabel of a VM of another key: %v, want NOT_FOUND", err)
	}
}
