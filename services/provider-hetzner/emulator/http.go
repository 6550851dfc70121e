package emulator

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// apiPrefix is where the public API lives.
const apiPrefix = "/v1"

// route is one API endpoint: method, path pattern below /v1 ("{id}" matches
// one segment) and handler, which gets the {id} segment (or "").
type route struct {
	method  string
	pattern []string
	key     string
	handle  func(e *Emulator, r *http.Request, id string) reply
}

// newRoute builds a route; its key is "METHOD /pattern", as counted.
func newRoute(method, pattern string, handle func(e *Emulator, r *http.Request, id string) reply) route {
	return route{
		method: method, pattern: strings.Split(strings.TrimPrefix(pattern, "/"), "/"),
		key: method + " " + pattern, handle: handle,
	}
}

// serverActionRoute builds POST /servers/{id}/actions/<name>.
func serverActionRoute(name string) route {
	return newRoute(http.MethodPost, "/servers/{id}/actions/"+name, func(e *Emulator, r *http.Request, id string) reply {
		return e.serverAction(r, id, name)
	})
}

// routes is the API surface.
var routes = []route{
	newRoute(http.MethodGet, "/server_types", (*Emulator).listServerTypes),
	newRoute(http.MethodGet, "/server_types/{id}", (*Emulator).getServerType),
	newRoute(http.MethodGet, "/locations", (*Emulator).listLocations),
	newRoute(http.MethodGet, "/locations/{id}", (*Emulator).getLocation),
	newRoute(http.MethodGet, "/images", (*Emulator).listImages),
	newRoute(http.MethodGet, "/images/{id}", (*Emulator).getImage),
	newRoute(http.MethodGet, "/datacenters", datacentersGone),
	newRoute(http.MethodGet, "/datacenters/{id}", datacentersGone),
	newRoute(http.MethodGet, "/servers", (*Emulator).listServers),
	newRoute(http.MethodPost, "/servers", (*Emulator).createServer),
	newRoute(http.MethodGet, "/servers/{id}", (*Emulator).getServer),
	newRoute(http.MethodPut, "/servers/{id}", (*Emulator).updateServer),
	newRoute(http.MethodDelete, "/servers/{id}", (*Emulator).deleteServer),
	newRoute(http.MethodGet, "/servers/{id}/actions", (*Emulator).listServerActions),
	serverActionRoute("poweron"),
	serverActionRoute("poweroff"),
	serverActionRoute("shutdown"),
	serverActionRoute("reboot"),
	serverActionRoute("reset"),
	serverActionRoute("rebuild"),
	newRoute(http.MethodPost, "/servers/{id}/actions/change_type", (*Emulator).changeType),
	newRoute(http.MethodPost, "/servers/{id}/actions/attach_to_network", (*Emulator).attachToNetwork),
	newRoute(http.MethodGet, "/servers/{id}/metrics", (*Emulator).serverMetrics),
	newRoute(http.MethodGet, "/networks", (*Emulator).listNetworks),
	newRoute(http.MethodPost, "/networks", (*Emulator).createNetwork),
	newRoute(http.MethodGet, "/networks/{id}", (*Emulator).getNetwork),
	newRoute(http.MethodGet, "/firewalls", (*Emulator).listFirewalls),
	newRoute(http.MethodPost, "/firewalls", (*Emulator).createFirewall),
	newRoute(http.MethodGet, "/firewalls/{id}", (*Emulator).getFirewall),
	newRoute(http.MethodGet, "/placement_groups", (*Emulator).listPlacementGroups),
	newRoute(http.MethodPost, "/placement_groups", (*Emulator).createPlacementGroup),
	newRoute(http.MethodGet, "/placement_groups/{id}", (*Emulator).getPlacementGroup),
	newRoute(http.MethodDelete, "/placement_groups/{id}", (*Emulator).deletePlacementGroup),
	newRoute(http.MethodGet, "/primary_ips", (*Emulator).listPrimaryIPs),
	newRoute(http.MethodGet, "/actions", (*Emulator).listActions),
	newRoute(http.MethodGet, "/actions/{id}", (*Emulator).getAction),
}

// matchRoute finds the route for method and path (below /v1) and the value
// of its {id} segment.
func matchRoute(method, path string) (*route, string) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range routes {
		rt := &routes[i]
		if rt.method != method || len(rt.pattern) != len(segs) {
			continue
		}
		id, matched := "", true
		for j, p := range rt.pattern {
			switch {
			case p == "{id}":
				id = segs[j]
			case p != segs[j]:
				matched = false
			}
		}
		if matched {
			return rt, id
		}
	}
	return nil, ""
}

// ServeHTTP serves the public API under /v1 and the control API under
// /_emulator/.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, controlPrefix):
		e.serveControl(w, r)
	case strings.HasPrefix(r.URL.Path, apiPrefix+"/"):
		e.serveAPI(w, r)
	default:
		writeReply(w, notFound("path "+r.URL.Path))
	}
}

// serveAPI runs one API call: count, authenticate, rate limit, apply
// faults, handle, reply. Every reply carries the RateLimit-* headers.
func (e *Emulator) serveAPI(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rt, id := matchRoute(r.Method, strings.TrimPrefix(r.URL.Path, apiPrefix))
	rep, key, dropped := e.answer(w, r, rt, id)
	if rep.status == 0 {
		e.log.Debug().Str("route", key).Bool("dropped", dropped).Msg("emulator: call not answered")
		return
	}
	writeReply(w, rep)
	e.log.Debug().Str("method", r.Method).Str("path", r.URL.Path).Str("route", key).
		Int("status", rep.status).Int64("took_ms", time.Since(start).Milliseconds()).Msg("emulator: call")
}

// answer decides the reply to an API call and sets the rate limit headers.
// A zero reply means nothing must be written: the call hung or timed out
// on injected latency, or its response was dropped (the connection is then
// already closed).
func (e *Emulator) answer(w http.ResponseWriter, r *http.Request, rt *route, id string) (rep reply, key string, dropped bool) {
	if rt == nil {
		// Guess: unknown paths and methods answer 404 not_found.
		e.limiter.peek(e.clock.Now()).writeHeaders(w.Header())
		return notFound("path " + r.URL.Path), "", false
	}
	e.calls.add(rt.key)
	if !e.authorized(r) {
		// Guess: a call that cannot be tied to a project costs no budget.
		e.limiter.peek(e.clock.Now()).writeHeaders(w.Header())
		return errorReply(http.StatusUnauthorized, "unauthorized", "unable to authenticate", nil), rt.key, false
	}
	allowed, rs := e.limiter.take(e.clock.Now())
	rs.writeHeaders(w.Header())
	if !allowed {
		e.calls.refused()
		return errorReply(http.StatusTooManyRequests, "rate_limit_exceeded", "limit of requests per hour reached", nil), rt.key, false
	}
	if rep, read := bufferBody(w, r); !read {
		return rep, rt.key, false
	}
	if !e.wait(r, rt.key) {
		return reply{}, rt.key, false
	}
	fail, drop := e.faults.outcome(rt.key)
	if fail != nil {
		return fail.reply(), rt.key, false
	}
	rep = rt.handle(e, r, id)
	if drop {
		dropConnection(w)
		return reply{}, rt.key, true
	}
	return rep, rt.key, false
}

// wait applies an armed hang or latency to a call of route; it reports
// false if the request ended first.
func (e *Emulator) wait(r *http.Request, route string) bool {
	hang, latency := e.faults.delay(route)
	if hang {
		<-r.Context().Done()
		return false
	}
	if latency <= 0 {
		return true
	}
	t := time.NewTimer(latency)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

// authorized checks the bearer token against Options.Tokens (any non-empty
// token if none were configured).
func (e *Emulator) authorized(r *http.Request) bool {
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || token == "" {
		return false
	}
	return len(e.tokens) == 0 || e.tokens[token]
}

// dropConnection closes the client connection without a reply. Without a
// hijackable connection (HTTP/2, recorders) it aborts the handler, which
// the net/http server turns into a reset stream or closed connection.
func dropConnection(w http.ResponseWriter) {
	hj, isHijacker := w.(http.Hijacker)
	if !isHijacker {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close() // the client sees the connection end; nothing to report
}

// writeReply writes rep as JSON.
func writeReply(w http.ResponseWriter, rep reply) {
	body, err := json.Marshal(rep.body)
	if err != nil {
		rep = errorReply(http.StatusInternalServerError, "server_error", "cannot encode reply", nil)
		body, _ = json.Marshal(rep.body) // an errorEnvelope always encodes
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = w.Write(append(body, '\n')) // a vanished client is not an error here
}
