package emulator

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// RouteChangeType is the route key of POST /servers/{id}/actions/change_type.
const RouteChangeType = "POST /servers/{id}/actions/change_type"

// RouteServerMetrics is the route key of GET /servers/{id}/metrics.
const RouteServerMetrics = "GET /servers/{id}/metrics"

// changeTypeRequest is the body of change_type; both fields are required.
type changeTypeRequest struct {
	ServerType  *schema.IDOrName `json:"server_type"`
	UpgradeDisk *bool            `json:"upgrade_disk"`
}

// changeType serves POST /servers/{id}/actions/change_type {server_type,
// upgrade_disk}: a change_server_type action (the server locked while it
// runs) that moves the server to the type, grows its disk to the type's
// with upgrade_disk (else keeps it), and starts the server again, as the
// API documents. Refusals, nothing started:
//   - 400 invalid_input: a field missing;
//   - 422 invalid_input (server_type): no such type (Guess: the API's
//     answer for an unknown type is not documented);
//   - 423 locked: another action runs;
//   - 422 server_not_stopped: the server is not off;
//   - 422 invalid_server_type: the type's disk is smaller than the
//     server's disk, its architecture differs, or it is deprecated.
//
// Guess: the server's status while the action runs is not documented; the
// emulator shows it off until the action ends.
func (e *Emulator) changeType(r *http.Request, raw string) reply {
	var req changeTypeRequest
	if rep, valid := decodeJSON(r, &req, false); !valid {
		return rep
	}
	var missing []fieldError
	if req.ServerType == nil {
		missing = append(missing, field("server_type", "Missing data for required field."))
	}
	if req.UpgradeDisk == nil {
		missing = append(missing, field("upgrade_disk", "Missing data for required field."))
	}
	if len(missing) > 0 {
		return invalidInput(http.StatusBadRequest, missing)
	}
	return e.withServer(raw, func(srv *server, now time.Time) reply {
		typ := e.typeByIDOrName(*req.ServerType)
		switch {
		case typ == nil:
			return invalidInput(http.StatusUnprocessableEntity, []fieldError{field("server_type", "server type not found")})
		case srv.running > 0:
			return lockedReply(srv)
		case srv.status != statusOff:
			return errorReply(http.StatusUnprocessableEntity, "server_not_stopped",
				fmt.Sprintf("server %d must be stopped to change its type", srv.id), nil)
		case typ.disk < srv.diskGB():
			return errorReply(http.StatusUnprocessableEntity, "invalid_server_type",
				fmt.Sprintf("server type %s has a %d GB disk, smaller than the server's %d GB", typ.name, typ.disk, srv.diskGB()), nil)
		case typ.architecture != srv.typ.architecture:
			return errorReply(http.StatusUnprocessableEntity, "invalid_server_type",
				fmt.Sprintf("server type %s has another architecture", typ.name), nil)
		case typ.deprecation != nil && !now.Before(typ.deprecation.unavailableAfter):
			return errorReply(http.StatusUnprocessableEntity, "invalid_server_type",
				fmt.Sprintf("server type %s is deprecated", typ.name), nil)
		}
		a := e.startActionLocked(cmdChangeType, srv, now)
		a.newType, a.upgradeDisk = typ, *req.UpgradeDisk
		return ok(struct {
			Action schema.Action `json:"action"`
		}{a.toSchema(now)})
	})
}

// applyChangeTypeLocked ends a successful change_server_type: the new type,
// the disk kept (pinned at its size) or grown, and the server running
// again. Callers hold e.mu.
func (e *Emulator) applyChangeTypeLocked(srv *server, a *action) {
	if a.upgradeDisk {
		srv.disk = a.newType.disk
	} else {
		srv.disk = srv.diskGB()
	}
	srv.typ = a.newType
	srv.status = statusRunning
}

// metricsSeries are the series of each metrics type, with the scale of
// their values.
var metricsSeries = map[string][]struct {
	name  string
	scale float64
}{
	"cpu": {{"cpu", 100}},
	"disk": {{"disk.0.iops.read", 200}, {"disk.0.iops.write", 100},
		{"disk.0.bandwidth.read", 4 << 20}, {"disk.0.bandwidth.write", 2 << 20}},
	"network": {{"network.0.pps.in", 500}, {"network.0.pps.out", 300},
		{"network.0.bandwidth.in", 1 << 20}, {"network.0.bandwidth.out", 512 << 10}},
}

// Metrics limits of the API: at most 500 samples per series, 200 when the
// step is chosen by the API.
const (
	maxMetricsSamples     = 500
	defaultMetricsSamples = 200
)

// serverMetrics serves GET /servers/{id}/metrics?type=…&start=…&end=…&step=…:
// type (repeated or comma-joined; cpu, disk, network), start and end
// (RFC3339) required, step (seconds) optional. The reply is
// {metrics:{start, end, step, time_series:{name:{values:[[unix, "value"]]}}}}
// with one sample per step from start (aligned to the step) before end:
// a daily wave per series, shifted per server, zero while the server is
// off at now (Guess: the API's values for a stopped server are not
// documented). Without a step, one giving at most 200 samples; a step
// giving more than 500 is raised to fit, as the API does.
//
// Errors: 400 invalid_input naming type, start, end or step.
func (e *Emulator) serverMetrics(r *http.Request, raw string) reply {
	q := r.URL.Query()
	var types []string
	for _, t := range q["type"] {
		for _, one := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' }) {
			if _, known := metricsSeries[one]; !known {
				return invalidInput(http.StatusBadRequest, []fieldError{field("type", "invalid metrics type")})
			}
			types = append(types, one)
		}
	}
	if len(types) == 0 {
		return invalidInput(http.StatusBadRequest, []fieldError{field("type", "Missing data for required field.")})
	}
	start, err1 := time.Parse(time.RFC3339, q.Get("start"))
	end, err2 := time.Parse(time.RFC3339, q.Get("end"))
	switch {
	case err1 != nil:
		return invalidInput(http.StatusBadRequest, []fieldError{field("start", "Not a valid datetime.")})
	case err2 != nil:
		return invalidInput(http.StatusBadRequest, []fieldError{field("end", "Not a valid datetime.")})
	case !start.Before(end):
		return invalidInput(http.StatusBadRequest, []fieldError{field("end", "end must be after start")})
	}
	span := int64(end.Sub(start) / time.Second)
	step := max(int64(math.Ceil(float64(span)/defaultMetricsSamples)), 1)
	if raw := q.Get("step"); raw != "" {
		n, err := strconv.ParseFloat(raw, 64)
		if err != nil || n <= 0 {
			return invalidInput(http.StatusBadRequest, []fieldError{field("step", "Not a valid number.")})
		}
		step = max(int64(n), 1, int64(math.Ceil(float64(span)/maxMetricsSamples)))
	}
	return e.withServer(raw, func(srv *server, _ time.Time) reply {
		series := map[string]metricsValues{}
		first := (start.Unix() + step - 1) / step * step
		phase := float64(srv.id%97) / 97 * 2 * math.Pi
		for _, t := range types {
			for _, s := range metricsSeries[t] {
				values := [][2]any{}
				for ts := first; ts < end.Unix(); ts += step {
					v := 0.0
					if srv.status == statusRunning {
						v = s.scale * (0.5 + 0.4*math.Sin(float64(ts%86400)/86400*2*math.Pi+phase))
					}
					values = append(values, [2]any{float64(ts), strconv.FormatFloat(v, 'f', 2, 64)})
				}
				series[s.name] = metricsValues{Values: values}
			}
		}
		return ok(struct {
			Metrics metricsJSON `json:"metrics"`
		}{metricsJSON{Start: start.UTC(), End: end.UTC(), Step: float64(step), TimeSeries: series}})
	})
}

// metricsJSON is the metrics object of GET /servers/{id}/metrics.
type metricsJSON struct {
	Start      time.Time                `json:"start"`
	End        time.Time                `json:"end"`
	Step       float64                  `json:"step"`
	TimeSeries map[string]metricsValues `json:"time_series"`
}

// metricsValues is one series: [unix seconds, "value"] pairs.
type metricsValues struct {
	Values [][2]any `json:"values"`
}
