package emulator

import (
	"net/http"
	"strings"
	"time"
)

// controlPrefix is where the control API lives, outside /v1. It needs no
// token, is not rate limited and is not counted.
const controlPrefix = "/_emulator/"

// Control API request bodies (JSON).
type (
	// routeFault arms a fault on a route: fail, drop and hang use n; fail
	// also status, code and message; latency uses duration ("250ms").
	routeFault struct {
		Route    string `json:"route"`
		N        int    `json:"n"`
		Status   int    `json:"status"`
		Code     string `json:"code"`
		Message  string `json:"message"`
		Duration string `json:"duration"`
	}
	// actionFaultRequest arms FailNextAction.
	actionFaultRequest struct {
		Command string `json:"command"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	// catalogueChange drives SetAvailability and Deprecate.
	catalogueChange struct {
		ServerType string `json:"server_type"`
		Location   string `json:"location"`
		Available  bool   `json:"available"`
	}
	// seedRequest drives SeedServers.
	seedRequest struct {
		N          int               `json:"n"`
		NamePrefix string            `json:"name_prefix"`
		Labels     map[string]string `json:"labels"`
	}
	// rateLimitRequest drives SetRateLimit.
	rateLimitRequest struct {
		Remaining int       `json:"remaining"`
		ResetAt   time.Time `json:"reset_at"`
	}
	// statusRequest drives SetServerStatus.
	statusRequest struct {
		Status string `json:"status"`
	}
)

// serveControl serves the control API:
//
//	GET    /_emulator/servers              → [ServerSnapshot]
//	POST   /_emulator/servers/seed         {n, name_prefix, labels} → {ids}
//	POST   /_emulator/servers/{id}/status  {status}
//	DELETE /_emulator/servers/{id}         (out-of-band delete)
//	GET    /_emulator/calls                → {route: count}
//	DELETE /_emulator/calls
//	POST   /_emulator/faults/fail          {route, n, status, code, message}
//	POST   /_emulator/faults/drop          {route, n}
//	POST   /_emulator/faults/hang          {route, n}
//	POST   /_emulator/faults/latency       {route, duration}
//	POST   /_emulator/faults/action        {command, code, message}
//	POST   /_emulator/availability         {server_type, location, available}
//	POST   /_emulator/deprecate            {server_type, location}
//	POST   /_emulator/location-full        {location, full}
//	GET    /_emulator/placement-groups     → [placement group with servers]
//	POST   /_emulator/ratelimit            {remaining, reset_at}
//	POST   /_emulator/reset
//
// Errors use the API's error body; successes without data answer {}.
func (e *Emulator) serveControl(w http.ResponseWriter, r *http.Request) {
	writeReply(w, e.control(r))
}

// control dispatches one control API call.
func (e *Emulator) control(r *http.Request) reply {
	path := strings.TrimPrefix(r.URL.Path, controlPrefix)
	if rest, isServer := strings.CutPrefix(path, "servers/"); isServer && rest != "seed" {
		return e.controlServer(r, rest)
	}
	switch r.Method + " " + path {
	case "GET servers":
		return ok(e.Servers())
	case "POST servers/seed":
		var req seedRequest
		return e.withBody(r, &req, func() reply {
			return ok(struct {
				IDs []int64 `json:"ids"`
			}{e.SeedServers(req.N, req.NamePrefix, req.Labels)})
		})
	case "GET calls":
		return ok(e.CallCounts())
	case "DELETE calls":
		e.ResetCalls()
		return ok(struct{}{})
	case "POST faults/fail", "POST faults/drop", "POST faults/hang", "POST faults/latency":
		var req routeFault
		return e.withBody(r, &req, func() reply { return e.armRouteFault(path, req) })
	case "POST faults/action":
		var req actionFaultRequest
		return e.withBody(r, &req, func() reply {
			e.FailNextAction(req.Command, req.Code, req.Message)
			return ok(struct{}{})
		})
	case "POST availability":
		var req catalogueChange
		return e.withBody(r, &req, func() reply {
			return catalogueReply(e.setAvailability(req.ServerType, req.Location, req.Available))
		})
	case "POST location-full":
		var req locationFull
		return e.withBody(r, &req, func() reply {
			if e.locationName(req.Location) == "" {
				return notFound("location " + req.Location)
			}
			e.SetLocationFull(req.Location, req.Full)
			return ok(struct{}{})
		})
	case "GET placement-groups":
		return ok(e.PlacementGroups())
	case "POST deprecate":
		var req catalogueChange
		return e.withBody(r, &req, func() reply {
			return catalogueReply(e.deprecate(req.ServerType, req.Location))
		})
	case "POST ratelimit":
		var req rateLimitRequest
		return e.withBody(r, &req, func() reply {
			e.SetRateLimit(req.Remaining, req.ResetAt)
			return ok(struct{}{})
		})
	case "POST reset":
		e.Reset()
		return ok(struct{}{})
	}
	return notFound("control endpoint " + r.Method + " " + r.URL.Path)
}

// withBody decodes the JSON body into v, then runs apply.
func (e *Emulator) withBody(r *http.Request, v any, apply func() reply) reply {
	if rep, valid := decodeJSON(r, v, false); !valid {
		return rep
	}
	return apply()
}

// armRouteFault arms the fault named by path (faults/fail, …) from req.
func (e *Emulator) armRouteFault(path string, req routeFault) reply {
	if req.Route == "" {
		return invalidInput(http.StatusUnprocessableEntity, []fieldError{field("route", "Missing data for required field.")})
	}
	switch path {
	case "faults/fail":
		e.FailNext(req.Route, req.N, req.Status, req.Code, req.Message)
	case "faults/drop":
		e.DropResponseNext(req.Route, req.N)
	case "faults/hang":
		e.HangNext(req.Route, req.N)
	case "faults/latency":
		d, err := time.ParseDuration(req.Duration)
		if err != nil {
			return invalidInput(http.StatusUnprocessableEntity, []fieldError{field("duration", err.Error())})
		}
		e.SetLatency(req.Route, d)
	}
	return ok(struct{}{})
}

// catalogueReply answers a catalogue change: 404 for unknown names.
func catalogueReply(err error) reply {
	if err != nil {
		return errorReply(http.StatusNotFound, "not_found", err.Error(), nil)
	}
	return ok(struct{}{})
}

// controlServer serves /_emulator/servers/{id}[/status].
func (e *Emulator) controlServer(r *http.Request, rest string) reply {
	raw, sub, _ := strings.Cut(rest, "/")
	id, valid := parseID(raw)
	if !valid {
		return notFound("server")
	}
	switch r.Method + " " + sub {
	case "DELETE ":
		e.DeleteServerOutOfBand(id)
		return ok(struct{}{})
	case "POST status":
		var req statusRequest
		return e.withBody(r, &req, func() reply {
			if req.Status == "" {
				return invalidInput(http.StatusUnprocessableEntity, []fieldError{field("status", "Missing data for required field.")})
			}
			e.SetServerStatus(id, req.Status)
			return ok(struct{}{})
		})
	}
	return notFound("control endpoint " + r.Method + " " + r.URL.Path)
}

// locationFull is the body of POST /_emulator/location-full.
type locationFull struct {
	Location string `json:"location"`
	Full     bool   `json:"full"`
}

// locationName is the name of the location ref names ("" for none).
func (e *Emulator) locationName(ref string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l := e.locationByName(ref); l != nil {
		return l.Name
	}
	return ""
}
