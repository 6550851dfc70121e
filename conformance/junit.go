package conformance

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// JUnit XML shapes (the subset CI systems read).
type (
	junitSuites struct {
		XMLName xml.Name     `xml:"testsuites"`
		Name    string       `xml:"name,attr"`
		Suites  []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Timestamp  string          `xml:"timestamp,attr"`
		Properties []junitProperty `xml:"properties>property"`
		Cases      []junitCase     `xml:"testcase"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitMessage `xml:"failure,omitempty"`
		Error     *junitMessage `xml:"error,omitempty"`
		Skipped   *junitMessage `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitMessage struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	}
)

// JUnit renders the report as junit.xml: one test suite per run, one test
// case per behaviour (classname = area); FAILED is a failure, INCOMPLETE
// an error (it blocks certification), SKIPPED a skip. Measured figures go
// to system-out.
func (r *Report) JUnit() ([]byte, error) {
	s := junitSuite{
		Name: "conformance/" + r.Provider.ID, Tests: r.Summary.Total, Failures: r.Summary.Failed,
		Errors: r.Summary.Incomplete, Skipped: r.Summary.Skipped,
		Time: seconds(r.End.Sub(r.Start).Seconds() * 1000), Timestamp: r.Start.UTC().Format("2006-01-02T15:04:05"),
		Properties: []junitProperty{
			{"provider", r.Provider.ID}, {"providerVersion", r.Provider.Version},
			{"profiles", strings.Join(r.Profiles, ",")}, {"suiteVersion", r.SuiteVersion},
			{"registryHash", r.RegistryHash}, {"gitCommit", r.GitCommit},
			{"seed", fmt.Sprint(r.Seed)}, {"verdict", string(r.Verdict)},
		},
	}
	for _, res := range r.Behaviours {
		tc := junitCase{Name: res.ID, Classname: res.Area, Time: seconds(res.DurationMs), SystemOut: caseOutput(res)}
		msg := &junitMessage{Message: res.Reason, Body: strings.Join(res.Log, "\n")}
		switch res.Status {
		case Failed:
			tc.Failure = msg
		case Incomplete:
			tc.Error = msg
		case Skipped:
			tc.Skipped = &junitMessage{Message: res.Reason}
		}
		s.Cases = append(s.Cases, tc)
	}
	data, err := xml.MarshalIndent(junitSuites{Name: "compute conformance", Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render junit.xml: %w", err)
	}
	return append([]byte(xml.Header), append(data, '\n')...), nil
}

// seconds formats milliseconds as JUnit's seconds.
func seconds(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }

// caseOutput lists a result's measured figures, one name=value per line.
func caseOutput(res Result) string { return strings.Join(metricLines(res.Metrics), "\n") }

// metricLines renders metrics as name=value, sorted by name.
func metricLines(m map[string]float64) []string {
	lines := make([]string, 0, len(m))
	for _, n := range sortedNames(m) {
		lines = append(lines, n+"="+strconv.FormatFloat(m[n], 'f', -1, 64))
	}
	return lines
}
