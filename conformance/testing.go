package conformance

import (
	"context"
	"testing"
)

// Run certifies s from a Go test: each behaviour is a subtest named by its
// id, which fails when the behaviour FAILED or is INCOMPLETE and is skipped
// with the reason when SKIPPED. It returns the report; the test fails
// unless the verdict is CERTIFIED. A subject the program cannot use fails
// the test at once.
func Run(t *testing.T, s Subject) *Report {
	t.Helper()
	return RunWith(t, s, Options{})
}

// RunWith is Run with options (a seed, timeouts, a subset of behaviours).
func RunWith(t *testing.T, s Subject, o Options) *Report {
	t.Helper()
	ctx := t.Context()
	r, err := newRun(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range r.order() {
		t.Run(b.ID, func(t *testing.T) {
			res := r.record(r.exec(ctx, b))
			for _, line := range res.Log {
				t.Log(line)
			}
			for _, m := range metricLines(res.Metrics) {
				t.Log(m)
			}
			switch res.Status {
			case Failed:
				t.Errorf("FAILED: %s", res.Reason)
			case Incomplete:
				t.Errorf("INCOMPLETE: %s", res.Reason)
			case Skipped:
				t.Skip(res.Reason)
			}
		})
	}
	report := r.finish(context.WithoutCancel(ctx))
	if report.Verdict != VerdictCertified {
		t.Errorf("verdict %s: %d failed, %d incomplete", report.Verdict, report.Summary.Failed, report.Summary.Incomplete)
	}
	return report
}
