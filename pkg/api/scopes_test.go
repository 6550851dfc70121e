package api

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestScopeOfAndImplies(t *testing.T) {
	if s, ok := ScopeOf("secrets", "put"); !ok || s != ScopeSecretsManage {
		t.Fatalf("secrets.put: %q %v", s, ok)
	}
	if _, ok := ScopeOf("secrets", "resolve"); ok {
		t.Fatal("secrets.resolve is not a public verb")
	}
	got := Allowed([]Scope{ScopeInstancesManage})
	var verbs []string
	for _, v := range got {
		verbs = append(verbs, v.Resource+"."+v.Verb)
	}
	want := []string{"instances.create", "instances.get", "instances.list", "instances.delete", "instances.power", "instances.reinstall",
		"instances.exec", "instances.logs", "instances.update", "instances.metrics"}
	if !reflect.DeepEqual(verbs, want) {
		t.Fatalf("instances:manage allows %v, want %v", verbs, want)
	}
	if n := len(Allowed([]Scope{ScopeAdmin})); n != len(Verbs) {
		t.Fatalf("admin allows %d of %d verbs", n, len(Verbs))
	}
	if n := len(Allowed([]Scope{ScopeInstancesRead})); n != 3 {
		t.Fatalf("instances:read allows %d verbs, want 3", n)
	}
}

func TestParseScopes(t *testing.T) {
	got, err := ParseScopes("scopes", []string{"compute:admin", "compute:secrets:manage"})
	if err != nil || !reflect.DeepEqual(got, []Scope{ScopeSecretsManage, ScopeAdmin}) {
		t.Fatalf("ParseScopes: %v %v", got, err)
	}
	for _, tc := range []struct {
		in   []string
		path string
	}{
		{nil, "scopes"},
		{[]string{"compute:admin", "compute:root"}, "scopes[1]"},
		{[]string{"compute:admin", "compute:admin"}, "scopes[1]"},
	} {
		_, err := ParseScopes("scopes", tc.in)
		if ce := AsComputeError(err); ce == nil || ce.Code != CodeInvalidInput || ce.Path() != tc.path {
			t.Errorf("ParseScopes(%q): %v, want INVALID_INPUT at %s", tc.in, err, tc.path)
		}
	}
}

const (
	scopeTableBegin  = "<!-- scope table: generated from api.Verbs by go test ./pkg/api -run TestUserGuideScopeTable -update -->\n"
	scopeTableFinish = "<!-- end of scope table -->\n"
)

// scopeTable is the user guide's scope table: one row per verb of Verbs.
func scopeTable() string {
	var b strings.Builder
	b.WriteString("| verb | subject | scope |\n|---|---|---|\n")
	for _, v := range Verbs {
		b.WriteString("| `" + v.Resource + "." + v.Verb + "` | `compute.v1.<tenant>." + v.Resource + "." + v.Verb + "` | `" + string(v.Scope) + "` |\n")
	}
	return b.String()
}

// TestUserGuideScopeTable: the scope table of docs/user-guide.md is
// Verbs' (-update rewrites it).
func TestUserGuideScopeTable(t *testing.T) {
	data, err := os.ReadFile(userGuide)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(data), scopeTableBegin)
	table, after, ok2 := strings.Cut(rest, scopeTableFinish)
	if !ok || !ok2 {
		t.Fatalf("%s has no %q … %q block", userGuide, scopeTableBegin, scopeTableFinish)
	}
	want := scopeTable()
	if table == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(userGuide, []byte(before+scopeTableBegin+want+scopeTableFinish+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the scope table of %s is not api.Verbs'; run go test ./pkg/api -run TestUserGuideScopeTable -update\ngot:\n%swant:\n%s", userGuide, table, want)
}
