package api

import (
	"reflect"
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
	want := []string{"instances.create", "instances.get", "instances.list", "instances.delete", "instances.power", "instances.reinstall"}
	if !reflect.DeepEqual(verbs, want) {
		t.Fatalf("instances:manage allows %v, want %v", verbs, want)
	}
	if n := len(Allowed([]Scope{ScopeAdmin})); n != len(Verbs) {
		t.Fatalf("admin allows %d of %d verbs", n, len(Verbs))
	}
	if n := len(Allowed([]Scope{ScopeInstancesRead})); n != 2 {
		t.Fatalf("instances:read allows %d verbs, want 2", n)
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
