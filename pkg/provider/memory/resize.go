package memory

import (
	"context"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// offer returns the offer with id.
func offer(id string) (api.Offer, bool) {
	i := slices.IndexFunc(Offers, func(o api.Offer) bool { return o.ID == id })
	if i < 0 {
		return api.Offer{}, false
	}
	return Offers[i], true
}

// diskOf is m's disk in GiB: grown by a resize, else its offer's.
func diskOf(m *machine) float64 {
	if m.diskGiB > 0 {
		return m.diskGiB
	}
	o, _ := offer(m.OfferID)
	return o.DiskGiB
}

// Resize moves the machine to req.OfferID at once (one call counted as
// VerbResize): the disk grows to the offer's with DiskGrow and is kept
// otherwise; an offer whose disk is smaller than the machine's is
// INVALID_INPUT naming offerId (nothing changed). The machine is left in
// req.Power (empty: as it was); a running machine is reported Rebooted
// (the memory cloud, like Hetzner, resizes only a stopped machine).
func (cl *client) Resize(ctx context.Context, call *provider.Call, req api.ProviderResizeRequest) (*api.ResizeResult, error) {
	c, m, err := cl.beginMachine(ctx, call, provider.VerbResize, req.ID)
	if err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	target, ok := offer(req.OfferID)
	if !ok {
		return nil, notExecuted(api.InvalidInput("offerId", "unknown offer %q", req.OfferID))
	}
	if m.OfferID == req.OfferID {
		out := m.ExternalMachine
		return &api.ResizeResult{Machine: &out}, nil
	}
	if disk := diskOf(m); target.DiskGiB < disk {
		return nil, notExecuted(api.InvalidInput("offerId",
			"offer %s has a %g GiB disk, smaller than the machine's %g GiB", target.ID, target.DiskGiB, disk))
	}
	res := &api.ResizeResult{Changed: true, Rebooted: m.State == api.StateRunning}
	if !req.DiskGrow {
		m.diskGiB = diskOf(m)
	} else {
		m.diskGiB = target.DiskGiB
	}
	m.OfferID = req.OfferID
	switch req.Power {
	case api.PowerOn:
		m.State = api.StateRunning
	case api.PowerOff:
		m.State = api.StateStopped
	}
	out := m.ExternalMachine
	res.Machine = &out
	return res, nil
}

// notExecuted marks ce as refused before anything changed.
func notExecuted(ce *api.ComputeError) *api.ComputeError {
	ce.Details.NotExecuted = true
	ce.Details.Permanent = true
	return ce
}

// Metrics answers a plausible, deterministic series per name of w.Type
// (one call counted as VerbMetrics): a daily wave plus a per-machine
// offset, one point per step over [from, to).
func (cl *client) Metrics(ctx context.Context, call *provider.Call, id string, w api.MetricsWindow) (*api.Metrics, error) {
	c, _, err := cl.beginMachine(ctx, call, provider.VerbMetrics, id)
	if err != nil {
		return nil, err
	}
	c.mu.Unlock()
	return SyntheticMetrics(id, w), nil
}

// syntheticSeries are the series SyntheticMetrics draws per type: name,
// unit and scale.
var syntheticSeries = map[api.MetricsType][]struct {
	name, unit string
	scale      float64
}{
	api.MetricsCPU:     {{"cpu", "percent", 100}},
	api.MetricsDisk:    {{"disk.0.bandwidth.read", "bytes/s", 4 << 20}, {"disk.0.bandwidth.write", "bytes/s", 2 << 20}},
	api.MetricsNetwork: {{"network.0.bandwidth.in", "bytes/s", 1 << 20}, {"network.0.bandwidth.out", "bytes/s", 512 << 10}},
}

// SyntheticMetrics is a plausible, deterministic answer for machine id
// and window w: every series of w.Type, one point per step (aligned to
// the step) in [From, To), values a daily wave between 10 % and 90 % of
// the series' scale, shifted per machine.
func SyntheticMetrics(id string, w api.MetricsWindow) *api.Metrics {
	step := w.StepOrDefault()
	h := fnv.New32a()
	h.Write([]byte(id))
	phase := float64(h.Sum32()%1000) / 1000 * 2 * math.Pi
	out := &api.Metrics{Type: w.Type, From: w.From.UTC(), To: w.To.UTC(), Step: step, Series: []api.MetricSeries{}}
	first := (w.From.Unix() + step - 1) / step * step
	for _, s := range syntheticSeries[w.Type] {
		series := api.MetricSeries{Name: s.name, Unit: s.unit, Points: []api.MetricPoint{}}
		for t := first; t < w.To.Unix(); t += step {
			day := float64(t%86400) / 86400 * 2 * math.Pi
			v := s.scale * (0.5 + 0.4*math.Sin(day+phase))
			series.Points = append(series.Points, api.MetricPoint{Time: time.Unix(t, 0).UTC(), Value: math.Round(v*100) / 100})
		}
		out.Series = append(out.Series, series)
	}
	return out
}

// SetOffer moves a machine to another offer out of band (a resize that
// landed without its caller learning of it).
func (c *Cloud) SetOffer(id, offerID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.machines[id]; ok {
		m.OfferID = offerID
	}
}
