package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Status is the outcome of one behaviour.
type Status string

// Behaviour statuses.
const (
	// Passed: the behaviour ran and held.
	Passed Status = "PASSED"
	// Failed: the behaviour ran and did not hold.
	Failed Status = "FAILED"
	// Skipped: outside the claimed profiles, or needs a capability the
	// provider does not claim. Never counts against the verdict.
	Skipped Status = "SKIPPED"
	// Incomplete: required, but could not run (a hook is missing, or it
	// was not selected).
	Incomplete Status = "INCOMPLETE"
)

// Verdict is the outcome of a run.
type Verdict string

// Verdicts: FAILED if a required behaviour failed, INCOMPLETE if one did
// not run, CERTIFIED otherwise.
const (
	VerdictCertified  Verdict = "CERTIFIED"
	VerdictFailed     Verdict = "FAILED"
	VerdictIncomplete Verdict = "INCOMPLETE"
)

// Result is the outcome of one behaviour: its status, the reason of a
// skip, failure or incompleteness, the log lines it wrote and the figures
// it measured (latencies in milliseconds, counts, bytes), by name.
type Result struct {
	ID         string             `json:"id"`
	Area       string             `json:"area"`
	Title      string             `json:"title"`
	Profiles   []string           `json:"profiles"`
	Capability string             `json:"capability,omitempty"`
	Status     Status             `json:"status"`
	Reason     string             `json:"reason,omitempty"`
	DurationMs float64            `json:"durationMs"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Log        []string           `json:"log,omitempty"`
}

// ProviderInfo names the provider as its describe answered.
type ProviderInfo struct {
	ID           string   `json:"id"`
	Version      string   `json:"version"`
	Capabilities []string `json:"capabilities"`
}

// Summary counts results by status.
type Summary struct {
	Total      int `json:"total"`
	Passed     int `json:"passed"`
	Failed     int `json:"failed"`
	Skipped    int `json:"skipped"`
	Incomplete int `json:"incomplete"`
}

// Report is report.json: who was certified with what, where, when, each
// behaviour's result and the verdict.
type Report struct {
	Provider     ProviderInfo `json:"provider"`
	Profiles     []string     `json:"profiles"`
	SuiteVersion string       `json:"suiteVersion"`
	RegistryHash string       `json:"registryHash"`
	GitCommit    string       `json:"gitCommit"`
	Seed         uint64       `json:"seed"`
	Prefix       string       `json:"prefix"`
	Host         Host         `json:"host"`
	Start        time.Time    `json:"start"`
	End          time.Time    `json:"end"`
	Verdict      Verdict      `json:"verdict"`
	Summary      Summary      `json:"summary"`
	Behaviours   []Result     `json:"behaviours"`
}

// Result returns the result of behaviour id (false when absent).
func (r *Report) Result(id string) (Result, bool) {
	for _, res := range r.Behaviours {
		if res.ID == id {
			return res, true
		}
	}
	return Result{}, false
}

// WithStatus returns the ids of the behaviours with status s, in order.
func (r *Report) WithStatus(s Status) []string {
	var ids []string
	for _, res := range r.Behaviours {
		if res.Status == s {
			ids = append(ids, res.ID)
		}
	}
	return ids
}

// finish computes the summary and the verdict from the results.
func (r *Report) finish() {
	r.Summary = Summary{Total: len(r.Behaviours)}
	for _, res := range r.Behaviours {
		switch res.Status {
		case Passed:
			r.Summary.Passed++
		case Failed:
			r.Summary.Failed++
		case Skipped:
			r.Summary.Skipped++
		case Incomplete:
			r.Summary.Incomplete++
		}
	}
	switch {
	case r.Summary.Failed > 0:
		r.Verdict = VerdictFailed
	case r.Summary.Incomplete > 0:
		r.Verdict = VerdictIncomplete
	default:
		r.Verdict = VerdictCertified
	}
}

// JSON renders the report as indented JSON (report.json).
func (r *Report) JSON() ([]byte, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render report.json: %w", err)
	}
	return append(data, '\n'), nil
}

// Report file names WriteFiles writes.
const (
	ReportJSONFile  = "report.json"
	ReportJUnitFile = "junit.xml"
)

// WriteFiles writes report.json and junit.xml into dir (created 0755 when
// absent). Errors: the file system's.
func (r *Report) WriteFiles(dir string) error {
	data, err := r.JSON()
	if err != nil {
		return err
	}
	junit, err := r.JUnit()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSONFile), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ReportJUnitFile), junit, 0o644)
}

// DefaultReportDir is where `compute certify` writes a provider's
// report.json and junit.xml unless --report chooses: <DefaultReportDir>/<provider>.
const DefaultReportDir = "conformance-report"

// Headline is the one line that sums the run up for a person, naming the
// provider as name: "CERTIFIED: <name> passed <n> of <n> required
// behaviours (<k> skipped) in <duration>", or "FAILED: <name>: <id>
// failed: <reason> (…)" naming the first failing behaviour, or
// "INCOMPLETE: <name>: <id> did not run: <reason> (…)".
func (r *Report) Headline(name string) string {
	s := r.Summary
	first := func(st Status) Result {
		res, _ := r.Result(r.WithStatus(st)[0])
		return res
	}
	switch r.Verdict {
	case VerdictFailed:
		res := first(Failed)
		return fmt.Sprintf("FAILED: %s: %s failed: %s (%d failed, %d incomplete, %d passed)", name, res.ID, res.Reason, s.Failed,
			s.Incomplete, s.Passed)
	case VerdictIncomplete:
		res := first(Incomplete)
		return fmt.Sprintf("INCOMPLETE: %s: %s did not run: %s (%d incomplete, %d passed)", name, res.ID, res.Reason, s.Incomplete, s.Passed)
	}
	return fmt.Sprintf("CERTIFIED: %s passed %d of %d required behaviours (%d skipped, profiles %s) in %s",
		name, s.Passed, s.Passed, s.Skipped, strings.Join(r.Profiles, ","), r.End.Sub(r.Start).Round(time.Second))
}
