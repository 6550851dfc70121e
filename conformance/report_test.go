package conformance

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		statuses []Status
		want     Verdict
	}{
		{[]Status{Passed, Skipped}, VerdictCertified},
		{[]Status{Skipped}, VerdictCertified},
		{[]Status{Passed, Incomplete, Skipped}, VerdictIncomplete},
		{[]Status{Passed, Incomplete, Failed}, VerdictFailed},
		{[]Status{Failed}, VerdictFailed},
	} {
		r := Report{}
		for _, s := range tc.statuses {
			r.Behaviours = append(r.Behaviours, Result{ID: "x", Status: s})
		}
		r.finish()
		if r.Verdict != tc.want || r.Summary.Total != len(tc.statuses) {
			t.Errorf("%v: verdict %s (summary %+v), want %s", tc.statuses, r.Verdict, r.Summary, tc.want)
		}
	}
}

func sampleReport() *Report {
	r := &Report{
		Provider: ProviderInfo{ID: "memory", Version: "1.0.0"}, Profiles: []string{ProfileCore},
		SuiteVersion: SuiteVersion, RegistryHash: RegistryHash(), GitCommit: "unknown", Seed: 7,
		Start: time.Unix(0, 0).UTC(), End: time.Unix(3, 0).UTC(),
		Behaviours: []Result{
			{ID: "def.describe", Area: AreaDefinition, Status: Passed, DurationMs: 12, Metrics: map[string]float64{"b": 2, "a": 1048576}},
			{ID: "offers.wellformed", Area: AreaOffers, Status: Failed, Reason: "offer 0: pricePerHour -1", Log: []string{"FAIL: offer 0: pricePerHour -1"}},
			{ID: "fault.rate-limited", Area: AreaFaults, Status: Incomplete, Reason: "needs the subject's Faults hook"},
			{ID: "life.list.only-managed", Area: AreaLifecycle, Status: Skipped, Reason: "profile cloud not claimed"},
		},
	}
	r.finish()
	return r
}

func TestJUnit(t *testing.T) {
	data, err := sampleReport().JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(data, &got); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	s := got.Suites[0]
	if s.Tests != 4 || s.Failures != 1 || s.Errors != 1 || s.Skipped != 1 || s.Name != "conformance/memory" || s.Time != "3.000" {
		t.Fatalf("suite = %+v", s)
	}
	c := s.Cases
	switch {
	case c[0].Failure != nil || c[0].SystemOut != "a=1048576\nb=2" || c[0].Time != "0.012":
		t.Errorf("passed case = %+v", c[0])
	case c[1].Failure == nil || c[1].Failure.Message != "offer 0: pricePerHour -1":
		t.Errorf("failed case = %+v", c[1])
	case c[2].Error == nil || c[3].Skipped == nil || c[3].Skipped.Message != "profile cloud not claimed":
		t.Errorf("incomplete and skipped cases = %+v, %+v", c[2], c[3])
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	if err := sampleReport().WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ReportJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Verdict != VerdictFailed || len(back.Behaviours) != 4 || back.RegistryHash != RegistryHash() || back.Seed != 7 {
		t.Fatalf("report.json = %+v", back)
	}
	if res, ok := back.Result("offers.wellformed"); !ok || res.Status != Failed {
		t.Fatalf("Result(offers.wellformed) = %+v, %v", res, ok)
	}
	if _, err := os.Stat(filepath.Join(dir, ReportJUnitFile)); err != nil {
		t.Fatal(err)
	}
}
