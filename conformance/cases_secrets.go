package conformance

import (
	"bytes"
)

func secretsReplies(c *check) {
	c.r.tap.settle()
	replies, size, leaks := c.r.tap.stats()
	c.Metric("repliesScanned", float64(replies))
	c.Metric("bytesScanned", float64(size))
	if replies == 0 {
		c.Incompletef("no reply was seen during the run")
	}
	for _, where := range leaks {
		c.Errorf("a secret value appears in %s", where)
	}
}

func secretsLogs(c *check) {
	logs := c.r.s.Logs()
	lines := bytes.Split(bytes.TrimSpace(logs), []byte("\n"))
	if len(logs) == 0 {
		c.Incompletef("no log line was captured during the run")
	}
	c.Metric("logLinesScanned", float64(len(lines)))
	forms := secretForms(c.r.s.SecretValues)
	leaked := 0
	for i, line := range lines {
		if containsAny(line, forms) {
			if leaked++; leaked <= 5 {
				c.Errorf("a secret value appears in captured log line %d", i+1)
			}
		}
	}
	if leaked > 5 {
		c.Errorf("a secret value appears in %d captured log lines in all", leaked)
	}
}

func secretsReports(c *check) {
	snap, redacted := c.r.snapshot()
	for _, id := range redacted {
		c.Errorf("a secret value appeared in the results of %s (redacted from the reports)", id)
	}
	forms := secretForms(c.r.s.SecretValues)
	data, err := snap.JSON()
	if err != nil {
		c.Fatalf("%v", err)
	}
	junit, err := snap.JUnit()
	if err != nil {
		c.Fatalf("%v", err)
	}
	c.Metric("reportBytesScanned", float64(len(data)+len(junit)))
	if containsAny(data, forms) {
		c.Errorf("a secret value appears in %s", ReportJSONFile)
	}
	if containsAny(junit, forms) {
		c.Errorf("a secret value appears in %s", ReportJUnitFile)
	}
}
