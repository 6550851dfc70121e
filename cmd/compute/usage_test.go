package main

import (
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

func TestSparkline(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []float64
		width  int
		want   string
	}{
		{"rising", []float64{0, 1, 2, 3, 4, 5, 6, 7}, 72, "▁▂▃▄▅▆▇█"},
		{"flat", []float64{3, 3, 3}, 72, "▁▁▁"},
		{"averaged into the width", []float64{0, 0, 10, 10}, 2, "▁█"},
		{"empty", nil, 72, ""},
	} {
		if got := sparkline(c.values, c.width); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDrawMetrics(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := api.Metrics{Type: api.MetricsNetwork, From: at, To: at.Add(3 * time.Minute), Step: 60, Series: []api.MetricSeries{
		{Name: "network.0.bandwidth.in", Unit: "bytes/s", Points: []api.MetricPoint{{Time: at, Value: 1000}, {Time: at.Add(time.Minute), Value: 2_500_000}}},
		{Name: "network.0.bandwidth.out", Unit: "bytes/s", Points: []api.MetricPoint{}},
	}}
	var b strings.Builder
	if err := drawMetrics(&b, m); err != nil {
		t.Fatal(err)
	}
	want := "network from 2026-03-01T12:00:00Z to 2026-03-01T12:03:00Z, every 60s\n" +
		"network.0.bandwidth.in   ▁█  last 2.5M  min 1.0k  max 2.5M bytes/s\n" +
		"network.0.bandwidth.out  (no data)\n"
	if b.String() != want {
		t.Fatalf("drawn:\n%s\nwant:\n%s", b.String(), want)
	}
}

// compute instances metrics through the stack (Hetzner emulator): -o json
// gives the series, -o table draws a sparkline per series.
func TestInstancesMetricsCLI(t *testing.T) {
	_, c := startTestCLI(t)
	_, _, pool := c.hetznerPool("metrics")
	var inst api.Instance
	c.must(&inst, "", "instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "web-m", "--wait")
	var m api.Metrics
	c.must(&m, "", "instances", "metrics", "web-m", "--type", "network", "--since", "1h", "--step", "60s", "-o", "json")
	if m.Type != api.MetricsNetwork || m.Step != 60 || len(m.Series) != 4 {
		t.Fatalf("metrics: type %s, step %d, %d series", m.Type, m.Step, len(m.Series))
	}
	for _, s := range m.Series {
		if n := len(s.Points); n < 59 || n > 60 {
			t.Errorf("series %s: %d points", s.Name, n)
		}
	}
	out, err := c.run("", "instances", "metrics", inst.ID, "--type", "cpu", "-o", "table")
	if err != nil || !strings.Contains(out, "cpu ") || !strings.ContainsAny(out, string(sparkBlocks)) {
		t.Fatalf("table output %q, %v", out, err)
	}
	if _, err := c.run("", "instances", "metrics", inst.ID, "--type", "memory"); !api.IsCode(err, api.CodeInvalidInput) {
		t.Fatalf("--type memory: %v", err)
	}
}
