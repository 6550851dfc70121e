package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
)

// chartWindow is the span of the instance page's metrics chart, ending now.
const chartWindow = time.Hour

// chartMaxAge is how long a session reuses the chart it drew (see
// session.chartFor): Hetzner's points are a minute or more apart in an
// hour's window anyway.
const chartMaxAge = time.Minute

// chartWidth and chartHeight are the SVG viewBox of one series' chart.
const chartWidth, chartHeight = 600, 120

// chart is the instance page's metrics chart (instances.metrics, type
// cpu, the last chartWindow): one SVG line per series, or why there is
// none (Err: UNSUPPORTED for a provider without metrics, the provider's
// error otherwise).
type chart struct {
	Series []chartSeries
	Err    *api.ComputeError
}

// chartSeries is one series drawn in a chartWidth × chartHeight box:
// time from the window's start (left) to its end (right), values from 0
// (bottom) to the series' maximum (top).
type chartSeries struct {
	Name, Unit string
	// Points is the SVG polyline's points attribute ("x,y x,y ...").
	Points string
	// Last and Max are the last and the largest value, formatted.
	Last, Max string
}

// newChart draws m; a series without points is left out.
func newChart(m api.Metrics) chart {
	var c chart
	span := m.To.Sub(m.From).Seconds()
	for _, s := range m.Series {
		if len(s.Points) == 0 || span <= 0 {
			continue
		}
		top := 0.0
		for _, p := range s.Points {
			top = max(top, p.Value)
		}
		scale := 0.0
		if top > 0 {
			scale = chartHeight / top
		}
		xy := make([]string, len(s.Points))
		for i, p := range s.Points {
			x := min(max(p.Time.Sub(m.From).Seconds()/span, 0), 1) * chartWidth
			y := chartHeight - max(p.Value, 0)*scale
			xy[i] = strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64)
		}
		c.Series = append(c.Series, chartSeries{Name: s.Name, Unit: s.Unit, Points: strings.Join(xy, " "),
			Last: formatValue(s.Points[len(s.Points)-1].Value), Max: formatValue(top)})
	}
	return c
}

// formatValue is v with one decimal, or none from 1000 up.
func formatValue(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
