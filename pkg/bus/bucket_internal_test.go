package bus

import "testing"

func TestMissingKeys(t *testing.T) {
	set := func(keys ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range keys {
			m[k] = true
		}
		return m
	}
	cases := []struct {
		name       string
		want, seen map[string]bool
		missing    int
	}{
		{"no leader view (plain KeyValue)", nil, set("a.1"), 0},
		{"replica holds all", set("a.1", "a.2"), set("a.1", "a.2"), 0},
		{"replica holds more (written since)", set("a.1"), set("a.1", "a.2"), 0},
		{"replica lags by one", set("a.1", "a.2", "a.3"), set("a.1", "a.2"), 1},
		{"replica holds nothing yet", set("a.1", "a.2"), set(), 2},
	}
	for _, tc := range cases {
		if got := missingKeys(tc.want, tc.seen); got != tc.missing {
			t.Errorf("%s: %d missing, want %d", tc.name, got, tc.missing)
		}
	}
}
