package hetzner

import (
	"maps"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// TestLabelMapping: user labels go on a server as they are, beside the
// system labels, which none replaces; reading back leaves every system
// label out (the prefix's, a subdomain's, the emulator's SSH port).
func TestLabelMapping(t *testing.T) {
	l := newLabels(DefaultLabelPrefix)
	system := l.forKey("inst_1")
	for _, tc := range []struct {
		name       string
		user, want map[string]string
	}{
		{"none", nil, system},
		{"as they are", map[string]string{"env": "prod", "example.com/team": "web", "backup": ""},
			merged(system, map[string]string{"env": "prod", "example.com/team": "web", "backup": ""})},
		{"a system key is never replaced", map[string]string{l.managed: "false", l.key: "other", "x." + DefaultLabelPrefix + "/k": "v"},
			system},
	} {
		if got := l.withUser(system, tc.user); !maps.Equal(got, tc.want) {
			t.Errorf("%s: server labels %v, want %v", tc.name, got, tc.want)
		}
	}
	server := merged(system, map[string]string{"env": "prod", api.EmulatorSSHPortKey: "2222", "sub." + DefaultLabelPrefix + "/x": "y"})
	if got := l.user(server); !maps.Equal(got, map[string]string{"env": "prod"}) {
		t.Errorf("user labels of %v = %v, want env=prod only", server, got)
	}
	if got := l.system(server); len(got) != 4 || got[l.key] != "inst_1" || got[api.EmulatorSSHPortKey] != "2222" {
		t.Errorf("system labels of %v = %v", server, got)
	}
	if got := l.user(system); got != nil {
		t.Errorf("user labels of a server with system labels only = %v, want none", got)
	}
	custom := newLabels("ops.example.org")
	if got := custom.user(map[string]string{"ops.example.org/managed": "true", DefaultLabelPrefix + "/x": "y"}); !maps.Equal(got,
		map[string]string{DefaultLabelPrefix + "/x": "y"}) {
		t.Errorf("with prefix ops.example.org the user labels are %v", got)
	}
}

func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
