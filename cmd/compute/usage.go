package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

// metricsCmd is `compute instances metrics ID|NAME --type cpu [--since 1h]
// [--step 60s]` (instances.metrics): on a terminal one sparkline per
// series, with its last, minimum and maximum values; -o json (the default
// off a terminal) prints the series.
func metricsCmd(g *globals) *cobra.Command {
	var (
		typ         string
		since, step time.Duration
	)
	cmd := &cobra.Command{
		Use:   "metrics ID|NAME",
		Short: "Show an instance's usage metrics (cpu, disk or network) as sparklines; -o json gives the series",
		Example: `  compute instances metrics inst_01… --type cpu --since 6h --step 5m
  compute instances metrics web-1 --type network -o json`,
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			to := time.Now().UTC().Truncate(time.Second)
			req := api.InstanceMetricsRequest{MetricsWindow: api.MetricsWindow{Type: api.MetricsType(typ),
				From: to.Add(-since), To: to, Step: int64(step / time.Second)}}
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error {
				req.ID = id
				m, err := c.Instances.Metrics(ctx, req)
				if err != nil {
					return err
				}
				return showText(g, m, func(w io.Writer) error { return drawMetrics(w, m) })
			})
		},
	}
	cmd.Flags().StringVar(&typ, "type", string(api.MetricsCPU), "cpu, disk or network")
	cmd.Flags().DurationVar(&since, "since", time.Hour, "how far back (at most 720h)")
	cmd.Flags().DurationVar(&step, "step", 0, "time between points (default: about 200 points)")
	return cmd
}

// sparkBlocks are the eight heights of a sparkline.
var sparkBlocks = []rune("▁▂▃▄▅▆▇█")

// maxSparkWidth bounds a sparkline's width: points are averaged into at
// most this many cells.
const maxSparkWidth = 72

// sparkline draws values as unicode blocks from the minimum (▁) to the
// maximum (█), averaging them into at most width cells; a flat series is
// all ▁.
func sparkline(values []float64, width int) string {
	if len(values) == 0 {
		return ""
	}
	cells := values
	if len(values) > width {
		cells = make([]float64, width)
		for i := range cells {
			lo, hi := i*len(values)/width, (i+1)*len(values)/width
			sum := 0.0
			for _, v := range values[lo:hi] {
				sum += v
			}
			cells[i] = sum / float64(hi-lo)
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range cells {
		lo, hi = min(lo, v), max(hi, v)
	}
	var b strings.Builder
	for _, v := range cells {
		i := 0
		if hi > lo {
			i = int(math.Round((v - lo) / (hi - lo) * float64(len(sparkBlocks)-1)))
		}
		b.WriteRune(sparkBlocks[i])
	}
	return b.String()
}

// drawMetrics writes the window and one line per series: its name, its
// sparkline, and its last, minimum and maximum values with the unit.
func drawMetrics(w io.Writer, m api.Metrics) error {
	from, to := m.From.Format(time.RFC3339), m.To.Format(time.RFC3339)
	if _, err := fmt.Fprintf(w, "%s from %s to %s, every %ds\n", m.Type, from, to, m.Step); err != nil {
		return err
	}
	width := 0
	for _, s := range m.Series {
		width = max(width, len(s.Name))
	}
	for _, s := range m.Series {
		values := make([]float64, len(s.Points))
		for i, p := range s.Points {
			values[i] = p.Value
		}
		if len(values) == 0 {
			if _, err := fmt.Fprintf(w, "%-*s  (no data)\n", width, s.Name); err != nil {
				return err
			}
			continue
		}
		lo, hi := values[0], values[0]
		for _, v := range values {
			lo, hi = min(lo, v), max(hi, v)
		}
		if _, err := fmt.Fprintf(w, "%-*s  %s  last %s  min %s  max %s %s\n", width, s.Name, sparkline(values, maxSparkWidth),
			humanValue(values[len(values)-1]), humanValue(lo), humanValue(hi), s.Unit); err != nil {
			return err
		}
	}
	return nil
}

// humanValue prints v with a k/M/G suffix (powers of 1000) past 1000.
func humanValue(v float64) string {
	for _, u := range []struct {
		div float64
		sfx string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div {
			return fmt.Sprintf("%.1f%s", v/u.div, u.sfx)
		}
	}
	return fmt.Sprintf("%.1f", v)
}
