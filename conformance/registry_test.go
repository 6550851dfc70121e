package conformance

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/provider"
)

var update = flag.Bool("update", false, "append new behaviours to testdata/registry.golden")

const goldenFile = "testdata/registry.golden"

// TestRegistryAppendOnly: the committed golden lines are a prefix of the
// registry's canonical lines (nothing removed, renamed, reordered or
// re-profiled), and equal to them (new behaviours are recorded with
// -update, which refuses anything but an append).
func TestRegistryAppendOnly(t *testing.T) {
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	golden := strings.SplitAfter(string(data), "\n")
	golden = golden[:len(golden)-1] // after the last newline
	current := strings.SplitAfter(canonical(registry), "\n")
	current = current[:len(current)-1]
	if len(current) < len(golden) || !slices.Equal(current[:len(golden)], golden) {
		for i, line := range golden {
			if i >= len(current) || current[i] != line {
				t.Fatalf("registry line %d changed or vanished: golden %q, now %q; behaviours are append-only", i+1, line, at(current, i))
			}
		}
	}
	if len(current) == len(golden) {
		return
	}
	if *update {
		if err := os.WriteFile(filepath.Clean(goldenFile), []byte(canonical(registry)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%d new behaviours are not in %s (first %q): run go test -run TestRegistryAppendOnly -update", len(current)-len(golden), goldenFile, current[len(golden)])
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(nothing)"
}

var (
	idPattern = regexp.MustCompile(`^[a-z]+(\.[a-z0-9]+(-[a-z0-9]+)*)+$`)
	areaOfID  = map[string]string{
		"def": AreaDefinition, "offers": AreaOffers, "life": AreaLifecycle, "err": AreaErrors, "fault": AreaFaults,
		"durable": AreaDurable, "transport": AreaTransport, "secrets": AreaSecrets, "scale": AreaScale, "ssh": AreaSSH,
		"labels": AreaLabels,
		"net":    AreaNetwork,
		"resize": AreaResize, "metrics": AreaMetrics,
		"metal": AreaMetal,
	}
)

func TestRegistryWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range registry {
		short, _, _ := strings.Cut(b.ID, ".")
		switch {
		case !idPattern.MatchString(b.ID):
			t.Errorf("%s: id must be dotted lower-case words", b.ID)
		case seen[b.ID]:
			t.Errorf("%s: listed twice", b.ID)
		case areaOfID[short] != b.Area:
			t.Errorf("%s: area %q, want %q", b.ID, b.Area, areaOfID[short])
		case b.Title == "" || b.run == nil:
			t.Errorf("%s: needs a title and a run function", b.ID)
		case len(b.Profiles) == 0:
			t.Errorf("%s: belongs to no profile", b.ID)
		case b.Capability != "" && !slices.Contains(provider.Capabilities, b.Capability):
			t.Errorf("%s: unknown capability %q", b.ID, b.Capability)
		}
		for _, p := range b.Profiles {
			if !slices.Contains(Profiles, p) {
				t.Errorf("%s: unknown profile %q", b.ID, p)
			}
		}
		seen[b.ID] = true
	}
	for _, p := range Profiles {
		if !slices.ContainsFunc(registry, func(b Behaviour) bool { return slices.Contains(b.Profiles, p) }) {
			t.Errorf("profile %s has no behaviour", p)
		}
	}
}

func TestRegistryHash(t *testing.T) {
	h := RegistryHash()
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(h) || h != RegistryHash() {
		t.Fatalf("hash %q is not a stable hex SHA-256", h)
	}
	changed := Registry()
	changed[0].Profiles = []string{ProfileCloud}
	if canonical(changed) == canonical(registry) {
		t.Fatal("re-profiling a behaviour does not change the canonical registry")
	}
	if ids := RegistryIDs(); len(ids) != len(registry) || ids[0] != registry[0].ID {
		t.Fatalf("RegistryIDs = %v", ids)
	}
}

func TestNeeds(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want []string
	}{
		{"def.describe", nil},
		{"durable.kill-after-accept", []string{"Faults", "Inventory", "Service"}},
		{"secrets.logs", []string{"SecretValues", "Logs"}},
	} {
		i := slices.IndexFunc(registry, func(b Behaviour) bool { return b.ID == tc.id })
		if got := registry[i].Needs(); !slices.Equal(got, tc.want) {
			t.Errorf("%s needs %v, want %v", tc.id, got, tc.want)
		}
	}
}
