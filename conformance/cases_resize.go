package conformance

import (
	"slices"
	"time"

	"better-compute.io/compute/pkg/api"
)

// resizeTarget is an offer other than the subject's, in its region, of its
// architecture and at least its disk (so every provider can move a
// machine there: Hetzner refuses a type of another architecture), available
// if one is; it ends the behaviour as failed when the account has none.
func (c *check) resizeTarget() api.Offer {
	ctx, cancel := c.callCtx()
	defer cancel()
	offers, err := c.remote().Offers(ctx, c.acct(), api.OfferQuery{})
	if err != nil {
		c.Fatalf("offers: %v", err)
	}
	i := slices.IndexFunc(offers, func(o api.Offer) bool { return o.ID == c.r.s.OfferID })
	if i < 0 {
		c.Fatalf("the subject's offer %s is not among the account's offers", c.r.s.OfferID)
	}
	from := offers[i]
	var fits []api.Offer
	for _, o := range offers {
		if o.ID != from.ID && o.Region == from.Region && o.Kind == from.Kind && o.Architecture == from.Architecture &&
			o.DiskGiB >= from.DiskGiB && o.CapacityType == from.CapacityType {
			fits = append(fits, o)
		}
	}
	if len(fits) == 0 {
		c.Fatalf("the account offers nothing to resize %s to (another offer of its region with at least its disk)", from.ID)
	}
	// An available one first; a cluster filled by other behaviours may
	// report none (Proxmox reports a node's free memory).
	if j := slices.IndexFunc(fits, func(o api.Offer) bool { return o.Available }); j >= 0 {
		return fits[j]
	}
	return fits[0]
}

// resize sends a resize of machine id to offer, leaving it in power.
func (c *check) resize(id, offer string, power api.Power) (*api.ResizeResult, error) {
	ctx, cancel := c.callCtx()
	defer cancel()
	return c.remote().Resize(ctx, api.ProviderResizeRequest{Account: c.acct(), ID: id, OfferID: offer, Power: power})
}

// resizeMovesOffer: a running machine resized to another offer keeps its
// id, reports the new offer (in the reply and to get) and runs again.
func resizeMovesOffer(c *check) {
	m := c.runningMachine()
	to := c.resizeTarget()
	res, err := c.resize(m.ID, to.ID, api.PowerOn)
	if err != nil {
		c.Fatalf("resize %s to %s: %v", m.ID, to.ID, err)
	}
	if !res.Changed || res.Machine == nil || res.Machine.ID != m.ID || res.Machine.OfferID != to.ID {
		c.Fatalf("resize %s to %s answered %+v", m.ID, to.ID, res)
	}
	got := c.waitState(m.ID, api.StateRunning)
	if got.OfferID != to.ID {
		c.Errorf("after the resize get reports offer %q, want %q", got.OfferID, to.ID)
	}
}

// resizeSameOffer: a resize to the offer the machine is on changes
// nothing and says so.
func resizeSameOffer(c *check) {
	m := c.runningMachine()
	res, err := c.resize(m.ID, c.r.s.OfferID, "")
	if err != nil {
		c.Fatalf("resize %s to the offer it is on: %v", m.ID, err)
	}
	if res.Changed || res.Rebooted || res.Machine == nil || res.Machine.OfferID != c.r.s.OfferID {
		c.Errorf("resize to the offer it is on answered %+v (want changed false)", res)
	}
	if got := c.waitState(m.ID, api.StateRunning); got.OfferID != c.r.s.OfferID {
		c.Errorf("get reports offer %q, want %q", got.OfferID, c.r.s.OfferID)
	}
}

// resizeRefusals: an unknown offer is INVALID_INPUT naming offerId and
// leaves the machine as it was; a resize of a deleted machine is
// NOT_FOUND.
func resizeRefusals(c *check) {
	m := c.runningMachine()
	_, err := c.resize(m.ID, "no-such-offer-"+c.name("o"), "")
	if c.expectCode("resize to an unknown offer", err, api.CodeInvalidInput) {
		if p := api.AsComputeError(err).Path(); p != "offerId" {
			c.Errorf("resize to an unknown offer names %q, want offerId", p)
		}
	}
	if got := c.waitState(m.ID, api.StateRunning); got.OfferID != c.r.s.OfferID {
		c.Errorf("after a refused resize get reports offer %q, want %q", got.OfferID, c.r.s.OfferID)
	}
	c.deleteGone(m.ID)
	_, err = c.resize(m.ID, c.r.s.OfferID, "")
	c.expectCode("resize of a deleted machine", err, api.CodeNotFound)
}

// metricsSeries: a running machine's cpu metrics of the last hour are
// well-formed: the type asked for, a positive step, at least one series,
// series sorted by name with a unit, points ascending inside the window
// the answer states, which spans the hour.
func metricsSeries(c *check) {
	m := c.runningMachine()
	to := time.Now().UTC().Truncate(time.Second)
	w := api.MetricsWindow{Type: api.MetricsCPU, From: to.Add(-time.Hour), To: to, Step: 60}
	ctx, cancel := c.callCtx()
	defer cancel()
	got, err := c.remote().Metrics(ctx, c.acct(), m.ID, w)
	if err != nil {
		c.Fatalf("metrics of %s: %v", m.ID, err)
	}
	if got.Type != api.MetricsCPU || got.Step <= 0 || len(got.Series) == 0 {
		c.Fatalf("metrics answered type %q, step %d, %d series", got.Type, got.Step, len(got.Series))
	}
	// Points are checked against the window the answer states (a replayed
	// recording answers the window of its own time), which must span what
	// was asked for.
	if span := got.To.Sub(got.From); span < w.To.Sub(w.From)-time.Duration(got.Step)*time.Second {
		c.Errorf("metrics answered a window of %s for one of %s", span, w.To.Sub(w.From))
	}
	w.From, w.To = got.From, got.To
	for i, s := range got.Series {
		if i > 0 && got.Series[i-1].Name >= s.Name {
			c.Errorf("series %q after %q: not sorted by name", s.Name, got.Series[i-1].Name)
		}
		if s.Name == "" || s.Unit == "" {
			c.Errorf("series %q has unit %q", s.Name, s.Unit)
		}
		for j, p := range s.Points {
			if p.Time.Before(w.From) || !p.Time.Before(w.To) || j > 0 && !s.Points[j-1].Time.Before(p.Time) {
				c.Errorf("series %s point %d at %s: outside [%s, %s) or not ascending", s.Name, j, p.Time, w.From, w.To)
				break
			}
		}
	}
}

// metricsWindowRefused: a bad window is INVALID_INPUT naming its field.
func metricsWindowRefused(c *check) {
	m := c.mustCreate(c.name("m"))
	to := time.Now().UTC().Truncate(time.Second)
	for _, b := range []struct {
		what, path string
		w          api.MetricsWindow
	}{
		{"an unknown type", "type", api.MetricsWindow{Type: "memory", From: to.Add(-time.Hour), To: to}},
		{"from after to", "from", api.MetricsWindow{Type: api.MetricsCPU, From: to, To: to.Add(-time.Hour)}},
		{"a negative step", "step", api.MetricsWindow{Type: api.MetricsCPU, From: to.Add(-time.Hour), To: to, Step: -60}},
	} {
		ctx, cancel := c.callCtx()
		_, err := c.remote().Metrics(ctx, c.acct(), m.ID, b.w)
		cancel()
		if c.expectCode("metrics with "+b.what, err, api.CodeInvalidInput) {
			if p := api.AsComputeError(err).Path(); p != b.path {
				c.Errorf("metrics with %s names %q, want %s", b.what, p, b.path)
			}
		}
	}
}
