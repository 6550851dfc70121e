package console

import (
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

// A series is drawn from the window's start (x 0) to its end (x 600),
// from 0 (y 120) to its maximum (y 0); a series without points is left
// out, and an all-zero one lies on the bottom.
func TestNewChart(t *testing.T) {
	from := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(minute int, v float64) api.MetricPoint {
		return api.MetricPoint{Time: from.Add(time.Duration(minute) * time.Minute), Value: v}
	}
	c := newChart(api.Metrics{Type: api.MetricsCPU, From: from, To: from.Add(time.Hour), Step: 60, Series: []api.MetricSeries{
		{Name: "cpu", Unit: "percent", Points: []api.MetricPoint{at(0, 50), at(30, 200), at(60, 100)}},
		{Name: "empty", Unit: "percent"},
		{Name: "idle", Unit: "percent", Points: []api.MetricPoint{at(0, 0), at(60, 0)}},
	}})
	want := []chartSeries{
		{Name: "cpu", Unit: "percent", Points: "0.0,90.0 300.0,0.0 600.0,60.0", Last: "100.0", Max: "200.0"},
		{Name: "idle", Unit: "percent", Points: "0.0,120.0 600.0,120.0", Last: "0.0", Max: "0.0"},
	}
	if c.Err != nil || len(c.Series) != len(want) {
		t.Fatalf("chart %+v, want %+v", c, want)
	}
	for i := range want {
		if c.Series[i] != want[i] {
			t.Errorf("series %d = %+v, want %+v", i, c.Series[i], want[i])
		}
	}
}
