package api

import (
	"strings"
	"testing"
)

func TestNewID(t *testing.T) {
	for _, prefix := range []string{PrefixSecret, PrefixAccount, PrefixPool, PrefixInstance, PrefixOperation, PrefixEvent} {
		t.Run(prefix, func(t *testing.T) {
			seen := make(map[string]bool, 1000)
			for range 1000 {
				id := NewID(prefix)
				body, ok := strings.CutPrefix(id, prefix)
				if !ok {
					t.Fatalf("%q lacks prefix %q", id, prefix)
				}
				if len(body) != 26 {
					t.Fatalf("%q: body has %d characters, want 26", id, len(body))
				}
				if body != strings.ToLower(body) {
					t.Fatalf("%q is not lower-case", id)
				}
				if !ValidID(prefix, id) {
					t.Fatalf("ValidID(%q, %q) = false", prefix, id)
				}
				if seen[id] {
					t.Fatalf("duplicate id %q", id)
				}
				seen[id] = true
			}
		})
	}
}

func TestValidID(t *testing.T) {
	const body = "01jd0000000000000000000000"
	tests := []struct {
		prefix, id string
		want       bool
	}{
		{PrefixSecret, "sec_" + body, true},
		{PrefixAccount, "pacct_" + body, true},
		{PrefixSecret, "pool_" + body, false},
		{PrefixSecret, "sec_" + strings.ToUpper(body), false},
		{PrefixSecret, "sec_" + body[:25], false},
		{PrefixSecret, "sec_" + body + "0", false},
		{PrefixSecret, "sec_" + body[:25] + ".", false},
		{PrefixSecret, "sec_" + body[:25] + "*", false},
		{PrefixSecret, "sec_" + body[:25] + ">", false},
		{PrefixSecret, "sec_" + body + "\n", false},
		{PrefixSecret, "", false},
		{PrefixSecret, "sec_", false},
		{PrefixPool, "xpool_" + body, false},
	}
	for _, tc := range tests {
		if got := ValidID(tc.prefix, tc.id); got != tc.want {
			t.Errorf("ValidID(%q, %q) = %v, want %v", tc.prefix, tc.id, got, tc.want)
		}
	}
}

func TestValidTenant(t *testing.T) {
	tests := []struct {
		tenant string
		want   bool
	}{
		{"acme", true},
		{"a", true},
		{"0", true},
		{"acme-prod-2", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"-acme", false},
		{"Acme", false},
		{"acme.prod", false},
		{"acme*", false},
		{"acme>", false},
		{"ac me", false},
		{"acme_prod", false},
		{"acme\n", false},
	}
	for _, tc := range tests {
		if got := ValidTenant(tc.tenant); got != tc.want {
			t.Errorf("ValidTenant(%q) = %v, want %v", tc.tenant, got, tc.want)
		}
	}
}
