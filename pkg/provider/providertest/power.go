package providertest

import (
	"testing"

	"better-compute.io/compute/pkg/api"
)

// WantPowerTable fails the test unless a provider's power table got maps
// every action of api.PowerActions but nmi as want does, has no entry for
// nmi (unsupported) and no other entry. Values name what an action calls,
// several joined with ",".
func WantPowerTable(t testing.TB, got, want map[api.PowerAction]string) {
	t.Helper()
	for _, action := range api.PowerActions() {
		endpoint, ok := got[action]
		if action == api.ActionNMI {
			if ok {
				t.Errorf("nmi maps to %q, want unsupported", endpoint)
			}
			continue
		}
		if endpoint != want[action] {
			t.Errorf("power %q → %q, want %q", action, endpoint, want[action])
		}
	}
	if len(got) != len(want) {
		t.Errorf("the power table has %d actions, want %d", len(got), len(want))
	}
}
