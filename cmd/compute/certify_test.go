package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"better-compute.io/compute/conformance"
)

// certify runs `compute certify args…` and returns its output and error.
func certify(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootWith(&out)
	root.SetArgs(append([]string{"certify"}, args...))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	return out.String(), err
}

func TestCertifyFakeMemory(t *testing.T) {
	dir := t.TempDir()
	out, err := certify(t, "--provider", "memory", "--fake", "--profile", "core,secrets", "--report", dir, "--seed", "42")
	if err != nil {
		t.Fatalf("certify: %v\n%s", err, out)
	}
	if !strings.Contains(out, "verdict CERTIFIED") || !strings.Contains(out, "PASSED     life.create.retry-same-key") ||
		!strings.Contains(out, "\nVERDICT: CERTIFIED\nCERTIFIED: memory passed ") {
		t.Fatalf("output lacks the verdict or a behaviour line:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, conformance.ReportJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var r conformance.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != conformance.VerdictCertified || r.Provider.ID != "memory" || r.Seed != 42 || len(r.Behaviours) != len(conformance.Registry()) {
		t.Fatalf("report: verdict %s, provider %+v, seed %d, %d behaviours", r.Verdict, r.Provider, r.Seed, len(r.Behaviours))
	}
	if _, err := os.Stat(filepath.Join(dir, conformance.ReportJUnitFile)); err != nil {
		t.Fatal(err)
	}
}

// TestCertifyHetznerByItsBigFleetName: --provider hetzner certifies
// hetzner-cloud, names it as given and writes the report under
// conformance-report/hetzner by default.
func TestCertifyHetznerByItsBigFleetName(t *testing.T) {
	t.Chdir(t.TempDir())
	out, err := certify(t, "--provider", "hetzner", "--fake", "--profile", "core", "--seed", "7")
	if err != nil {
		t.Fatalf("certify: %v\n%s", err, out)
	}
	if !strings.Contains(out, "\nCERTIFIED: hetzner passed ") {
		t.Fatalf("output lacks the CERTIFIED line:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(conformance.DefaultReportDir, "hetzner", conformance.ReportJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var r conformance.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != conformance.VerdictCertified || r.Provider.ID != "hetzner-cloud" {
		t.Fatalf("report: verdict %s, provider %+v", r.Verdict, r.Provider)
	}
	if _, err := os.Stat(filepath.Join(conformance.DefaultReportDir, "hetzner", conformance.ReportJUnitFile)); err != nil {
		t.Fatal(err)
	}
}

// TestCertifyLiveReplaysTheShippedRecording: --live --replay certifies
// from the recording made against the emulator, with no API and no
// credential, and prints the CERTIFIED line.
func TestCertifyLiveReplaysTheShippedRecording(t *testing.T) {
	out, err := certify(t, "--provider", "hetzner", "--live", "--replay", "../../conformance/live/testdata/hetzner-cloud",
		"--poll-interval", "25ms", "--report", t.TempDir())
	if err != nil {
		t.Fatalf("certify: %v\n%s", err, out)
	}
	if !strings.Contains(out, "\nVERDICT: CERTIFIED\nCERTIFIED: hetzner passed 46 of 46 required behaviours (30 skipped, profiles core,cloud,faults,durable,scale)") {
		t.Fatalf("output lacks the CERTIFIED line:\n%s", out)
	}
	if strings.Contains(out, "WARNING") {
		t.Errorf("a replay warned of a live project:\n%s", out)
	}
}

// TestCertifySeedCount: --seed-count (make SEED_COUNT=…) is the scale
// lane's seeded inventory.
func TestCertifySeedCount(t *testing.T) {
	dir := t.TempDir()
	out, err := certify(t, "--provider", "memory", "--fake", "--profile", "scale", "--seed-count", "120", "--report", dir)
	if err != nil {
		t.Fatalf("certify: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, conformance.ReportJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var r conformance.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	res, _ := r.Result("scale.list-complete")
	if res.Status != conformance.Passed || res.Metrics["machines"] != 120 {
		t.Errorf("scale.list-complete: %s, %v machines listed, want the 120 seeded", res.Status, res.Metrics["machines"])
	}
}

func TestCertifyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no provider", []string{"--fake"}, `"provider" not set`},
		{"no fake for the provider", []string{"--provider", "nosuch", "--fake"}, "no fake setup"},
		{"live run without config", []string{"--provider", "memory"}, "--config"},
		{"plain secret in the config", []string{"--provider", "memory", "--config", `{"token":"hunter2"}`, "--offer", "small", "--image", "x"}, "secret reference"},
		{"incomplete verdict", []string{"--provider", "memory", "--fake", "--profile", "core", "--only", "def.describe", "--report", t.TempDir()},
			"verdict INCOMPLETE: INCOMPLETE: memory: def.config-schema did not run"},
		{"bad port", []string{"--provider", "memory", "--fake", "--port", "70000"}, "--port 70000"},
		{"live run without config", []string{"--provider", "hetzner", "--live"}, "--config"},
		{"live run with a plain token", []string{"--provider", "hetzner", "--live", "--config", `{"token":"hunter2"}`}, "secret reference"},
		{"live run with an unset variable", []string{"--provider", "hetzner", "--live", "--config", `{"token":"env://CF_NO_SUCH_VARIABLE"}`},
			"CF_NO_SUCH_VARIABLE"},
		{"live run of a provider without a target", []string{"--provider", "memory", "--live", "--config", `{"token":"env://X"}`}, "no live target"},
		{"fake and live", []string{"--provider", "hetzner", "--fake", "--live"}, "none of the others can be"},
	} {
		out, err := certify(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q\n%s", tc.name, err, tc.want, out)
		}
		if strings.Contains(out+errText(err), "hunter2") {
			t.Errorf("%s: the plain secret is echoed", tc.name)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
