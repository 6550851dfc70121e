package hetzner

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Resize moves the server to the server type req.OfferID
// (POST /servers/{id}/actions/change_type {server_type, upgrade_disk:
// req.DiskGrow}), which the API does only for a stopped server, in steps,
// each action waited for:
//  1. GET /servers/{id}: a server already of the type is answered as it
//     is (Changed false, nothing sent); GET /server_types?name=…: an
//     unknown type, or one whose disk is smaller than the server's
//     primary_disk_size, is INVALID_INPUT naming offerId (nothing sent);
//  2. POST …/poweroff when the server is not off (Rebooted);
//  3. POST …/change_type, which copies the disk and starts the server
//     again;
//  4. the power state req.Power asks for (empty: the one before):
//     POST …/poweroff or …/poweron when the server is not in it;
//  5. GET /servers/{id}: the machine as it then is.
//
// About 6 requests plus one per poll interval each action runs. A refusal
// of change_type itself (4xx: 423 locked, 422 server_not_stopped) is
// details.notExecuted (the type was not changed; a power-off before it may
// have been); a failed change_server_type action leaves the server on its
// old type, off.
//
// Errors: INVALID_INPUT (id, offerId), NOT_FOUND, PROVIDER_ERROR,
// RATE_LIMITED, UNAVAILABLE.
func (c *client) Resize(ctx context.Context, call *provider.Call, req api.ProviderResizeRequest) (res *api.ResizeResult, err error) {
	s, sid, err := c.openServer(ctx, call, provider.VerbResize, req.ID)
	if err != nil {
		return nil, err
	}
	changeTypeRefused := false
	defer func() {
		err = s.done(ctx, err)
		if ce := api.AsComputeError(err); err != nil && changeTypeRefused {
			ce.Details.NotExecuted = true
			err = ce
		}
	}()
	srv, _, err := s.api.Server.GetByID(ctx, sid)
	if err != nil {
		return nil, err
	}
	if srv == nil {
		return nil, api.NotFound("server", req.ID)
	}
	if srv.ServerType != nil && srv.ServerType.Name == req.OfferID {
		return &api.ResizeResult{Machine: c.toMachine(srv, call.IdempotencyKey)}, nil
	}
	typ, _, err := s.api.ServerType.GetByName(ctx, req.OfferID)
	if err != nil {
		return nil, err
	}
	if err := resizeRefusal(srv, typ, req.OfferID); err != nil {
		return nil, err
	}
	wantOn := srv.Status == hcloud.ServerStatusRunning
	if req.Power != "" {
		wantOn = req.Power == api.PowerOn
	}
	res = &api.ResizeResult{Changed: true}
	if srv.Status != hcloud.ServerStatusOff {
		res.Rebooted = true
		if err := c.serverAction(ctx, s, sid, "poweroff"); err != nil {
			return nil, err
		}
	}
	a, _, err := s.api.Server.ChangeType(ctx, &hcloud.Server{ID: sid},
		hcloud.ServerChangeTypeOpts{ServerType: &hcloud.ServerType{Name: req.OfferID}, UpgradeDisk: req.DiskGrow})
	if err != nil {
		changeTypeRefused = hcloud.IsError(err, changeTypeRefusals...)
		return nil, err
	}
	if err := s.wait(ctx, c, a); err != nil {
		return nil, err
	}
	if srv, _, err = s.api.Server.GetByID(ctx, sid); err != nil {
		return nil, err
	}
	if srv == nil {
		return nil, api.NotFound("server", req.ID)
	}
	switch running := srv.Status == hcloud.ServerStatusRunning; {
	case wantOn && !running:
		err = c.serverAction(ctx, s, sid, "poweron")
	case !wantOn && running:
		err = c.serverAction(ctx, s, sid, "poweroff")
	default:
		res.Machine = c.toMachine(srv, call.IdempotencyKey)
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	if srv, _, err = s.api.Server.GetByID(ctx, sid); err != nil {
		return nil, err
	}
	if srv == nil {
		return nil, api.NotFound("server", req.ID)
	}
	res.Machine = c.toMachine(srv, call.IdempotencyKey)
	return res, nil
}

// changeTypeRefusals are the answers to change_type that prove the type
// was not changed: the API refused the request before acting on it.
var changeTypeRefusals = []hcloud.ErrorCode{hcloud.ErrorCodeLocked, hcloud.ErrorCodeInvalidInput,
	hcloud.ErrorCodeRateLimitExceeded, hcloud.ErrorCodeConflict, "server_not_stopped", "invalid_server_type"}

// resizeRefusal is the INVALID_INPUT naming offerId of a type the server
// cannot move to: unknown, or with a smaller disk than the server's
// (the API's 422 invalid_server_type), nil otherwise. It is a permanent
// refusal, sent nowhere (details.notExecuted).
func resizeRefusal(srv *hcloud.Server, typ *hcloud.ServerType, offerID string) error {
	var ce *api.ComputeError
	switch {
	case typ == nil:
		ce = api.InvalidInput("offerId", "hetzner-cloud: no server type %q", offerID)
	case float32(typ.Disk) < float32(srv.PrimaryDiskSize):
		ce = api.InvalidInput("offerId", "hetzner-cloud: server type %s has a %d GB disk, smaller than the server's %d GB",
			offerID, typ.Disk, srv.PrimaryDiskSize)
	default:
		return nil
	}
	ce.Details.NotExecuted, ce.Details.Permanent = true, true
	return ce
}

// serverAction runs one power endpoint of powerEndpoints on the server
// and waits for its action.
func (c *client) serverAction(ctx context.Context, s *session, sid int64, endpoint string) error {
	a, _, err := endpointCalls[endpoint](&s.api.Server, ctx, &hcloud.Server{ID: sid})
	if err != nil {
		return err
	}
	return s.wait(ctx, c, a)
}

// metricsUnits are the units of Hetzner's series, by name prefix.
var metricsUnits = []struct{ prefix, unit string }{
	{"cpu", "percent"},
	{"disk.0.iops", "iops"},
	{"disk.0.bandwidth", "bytes/s"},
	{"network.0.pps", "packets/s"},
	{"network.0.bandwidth", "bytes/s"},
}

// unitOf is the unit of a Hetzner series name ("" when unknown).
func unitOf(name string) string {
	for _, u := range metricsUnits {
		if len(name) >= len(u.prefix) && name[:len(u.prefix)] == u.prefix {
			return u.unit
		}
	}
	return ""
}

// Metrics reads GET /servers/{id}/metrics?type=…&start=…&end=…&step=…
// (one request) and answers its time_series as series sorted by name,
// each value parsed from the API's string; the API may raise the step
// to stay within 500 samples, and the answer says the step it used.
//
// Errors: INVALID_INPUT (id), NOT_FOUND, PROVIDER_ERROR (a value that is
// not a number), RATE_LIMITED, UNAVAILABLE.
func (c *client) Metrics(ctx context.Context, call *provider.Call, id string, w api.MetricsWindow) (out *api.Metrics, err error) {
	s, sid, err := c.openServer(ctx, call, provider.VerbMetrics, id)
	if err != nil {
		return nil, err
	}
	defer func() { err = s.done(ctx, err) }()
	m, _, err := s.api.Server.GetMetrics(ctx, &hcloud.Server{ID: sid}, hcloud.ServerGetMetricsOpts{
		Types: []hcloud.ServerMetricType{hcloud.ServerMetricType(w.Type)}, Start: w.From, End: w.To, Step: int(w.StepOrDefault())})
	if err != nil {
		return nil, err
	}
	out = &api.Metrics{Type: w.Type, From: m.Start.UTC(), To: m.End.UTC(), Step: int64(m.Step), Series: []api.MetricSeries{}}
	for name, values := range m.TimeSeries {
		series := api.MetricSeries{Name: name, Unit: unitOf(name), Points: make([]api.MetricPoint, 0, len(values))}
		for _, v := range values {
			f, perr := strconv.ParseFloat(v.Value, 64)
			if perr != nil {
				return nil, api.ProviderError(200, "invalid_value", "hetzner-cloud: metrics value %q of %s is not a number", v.Value, name)
			}
			sec := int64(v.Timestamp)
			series.Points = append(series.Points, api.MetricPoint{Time: time.Unix(sec, 0).UTC(), Value: f})
		}
		out.Series = append(out.Series, series)
	}
	sort.Slice(out.Series, func(i, j int) bool { return out.Series[i].Name < out.Series[j].Name })
	return out, nil
}
