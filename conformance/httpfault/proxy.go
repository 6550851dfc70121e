// Package httpfault is the certifier's own HTTP fault layer: a reverse
// proxy the provider's endpoint is pointed at, in front of the real API
// (or a recording of it). Every request of the provider passes it, is
// counted, may meet a fault armed through the conformance Faults hook
// (an injected status, a dropped response, a hung call, latency, a failed
// action, an empty rate budget), and is checked against a budget of
// requests and machines it will not exceed. It can record every exchange
// (secrets redacted) and replay a recording instead of the real API.
//
// What the proxy must know of one provider's API (its routes, error and
// rate-limit bodies, how a failed action and a created machine look) is
// its Dialect; the mechanism is the same for every provider.
//
// The request pipeline, in order (the order matters): count (hook
// traffic, the Inventory hook's own requests, is neither counted nor
// faulted); the rate window, an armed status, or a hang answer without
// reaching the API; the budget, taken only by requests that will reach
// it; latency; forward (or replay) and record; drop; action rewrite.
package httpfault

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"better-compute.io/compute/pkg/provider"

	"better-compute.io/compute/pkg/api"
)

// Route is an API route as a net/http pattern relative to the API's base
// path: "POST /servers", "GET /servers/{id}".
type Route string

// Dialect is what the proxy knows of one provider's API.
type Dialect struct {
	// Ops are the routes of each provider verb (provider.VerbCreate, …):
	// for create, the request that makes the machine.
	Ops map[string]Route
	// Actions are the routes starting each action (api.Action* or
	// api.ActionReinstall).
	Actions map[api.PowerAction]Route
	// FailAction rewrites the 2xx response body of an action route into
	// that of an action that failed.
	FailAction func(body []byte) ([]byte, error)
	// Error is the response of an injected status (5xx, 429 without a
	// reset): its headers and body.
	Error func(status int) (http.Header, []byte)
	// RateLimited is the 429 response while the rate budget is empty
	// until reset.
	RateLimited func(reset time.Time) (http.Header, []byte)
	// Created is the id of the machine a 2xx response body of the create
	// route made ("" when it names none).
	Created func(body []byte) string
	// SecretFields are JSON field names whose values a recording never
	// holds (tokens, passwords, user data), in request and response bodies.
	SecretFields []string
}

// Options configure Start.
type Options struct {
	// Upstream is the API's base URL ("https://api.hetzner.cloud/v1");
	// its path is the base path of the routes. Required, also with Replay
	// (then only its path is used).
	Upstream *url.URL
	// Addr is the listen address (default "127.0.0.1:0").
	Addr string
	// Dialect is the provider API's (required).
	Dialect Dialect
	// MaxRequests bounds the requests forwarded to the API, hook traffic
	// included (0: no bound); past it every request answers 503 and Err
	// says so.
	MaxRequests int
	// MaxMachines bounds the creates forwarded (0: no bound); past it a
	// create answers 503 and Err says so.
	MaxMachines int
	// Transport reaches the upstream (default http.DefaultTransport).
	Transport http.RoundTripper
	// Record, when set, receives every exchange with the upstream.
	Record *Recorder
	// Replay, when set, answers from a recording instead of the
	// upstream; a request not in it answers 502 and Err names it.
	Replay *Replay
}

// HookHeader marks a request of the certifier's own hooks (Inventory):
// it passes uncounted and without faults, and is stripped before it is
// forwarded.
const HookHeader = "X-Conformance-Hook"

// Proxy is a started fault layer. It implements conformance.Faults.
type Proxy struct {
	o    Options
	base string // the upstream's base path, without a trailing slash
	ln   net.Listener
	srv  *http.Server
	mux  *http.ServeMux // the dialect's routes, to name a request's route

	mu         sync.Mutex
	calls      int
	forwarded  int
	creates    int
	made       []string
	fail       map[Route][]int
	drop       map[Route]int
	hang       map[Route]int
	latency    map[Route]time.Duration
	actionFail map[Route]int
	rateUntil  time.Time
	err        error // the first budget overrun or replay divergence
}

// Start listens and serves. Errors: no upstream or dialect, a route that
// is not a valid pattern, the listener's.
func Start(o Options) (*Proxy, error) {
	if o.Upstream == nil || o.Dialect.Error == nil || o.Dialect.RateLimited == nil {
		return nil, errors.New("httpfault: Options.Upstream and Options.Dialect are required")
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	p := &Proxy{o: o, base: strings.TrimSuffix(o.Upstream.Path, "/"), mux: http.NewServeMux(),
		fail: map[Route][]int{}, drop: map[Route]int{}, hang: map[Route]int{},
		latency: map[Route]time.Duration{}, actionFail: map[Route]int{}}
	seen := map[Route]bool{}
	routes := slices.Collect(maps.Values(o.Dialect.Ops))
	routes = slices.AppendSeq(routes, maps.Values(o.Dialect.Actions))
	for _, r := range routes {
		if seen[r] {
			continue
		}
		seen[r] = true
		method, path, ok := strings.Cut(string(r), " ")
		if !ok {
			return nil, fmt.Errorf("httpfault: route %q is not \"METHOD /path\"", r)
		}
		if err := registerRoute(p.mux, method+" "+p.base+path, r); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	p.ln = ln
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// registerRoute adds pattern to mux, naming route; a malformed pattern is
// an error, not a panic.
func registerRoute(mux *http.ServeMux, pattern string, route Route) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("httpfault: route %q: %v", route, v)
		}
	}()
	mux.Handle(pattern, routeName(route))
	return nil
}

// routeName is the handler registered for a route: it is never served,
// only looked up.
type routeName Route

func (routeName) ServeHTTP(http.ResponseWriter, *http.Request) {}

// URL is the base URL to point the provider's endpoint at: the proxy's
// address with the upstream's base path ("http://127.0.0.1:PORT/v1").
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() + p.base }

// HookClient is an HTTP client for the certifier's own hooks: through
// the proxy (so it is budgeted, recorded and replayed) but uncounted and
// never faulted.
func (p *Proxy) HookClient() *http.Client {
	return &http.Client{Transport: hookTransport{}, Timeout: time.Minute}
}

// hookTransport marks every request with HookHeader.
type hookTransport struct{}

func (hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(HookHeader, "1")
	return http.DefaultTransport.RoundTrip(r)
}

// Made lists the ids of the machines created through the proxy (the
// provider's and the hooks'), in order: what a sweep must remove.
func (p *Proxy) Made() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.made...)
}

// Spent is the requests sent to the API (or the replay) and the creates
// among them.
func (p *Proxy) Spent() (requests, creates int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded, p.creates
}

// Err is the first budget overrun or replay divergence (nil: none).
func (p *Proxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Close stops serving; a hung call ends.
func (p *Proxy) Close() error { return p.srv.Close() }

// fault is what the pipeline decided for one request.
type fault struct {
	status     int           // injected status (0: none)
	rateReset  time.Time     // the rate window's reset (zero: open)
	hang, drop bool          // never answer; lose the response
	delay      time.Duration // before forwarding
	failAction bool          // rewrite the action response as failed
}

// ServeHTTP runs the pipeline (see the package doc).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	hook := r.Header.Get(HookHeader) != ""
	route := p.route(r)
	f, refusal := p.decide(route, hook)
	if refusal != nil {
		writeRefusal(w, p.o.Dialect.Error, refusal)
		return
	}
	switch {
	case !f.rateReset.IsZero():
		h, b := p.o.Dialect.RateLimited(f.rateReset)
		write(w, http.StatusTooManyRequests, h, b)
		return
	case f.status != 0:
		h, b := p.o.Dialect.Error(f.status)
		write(w, f.status, h, b)
		return
	case f.hang:
		<-r.Context().Done()
		return
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	resp, err := p.exchange(r, body, hook)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.observe(route, resp)
	if f.drop {
		dropConnection(w)
		return
	}
	if f.failAction && resp.status/100 == 2 && p.o.Dialect.FailAction != nil {
		if rewritten, err := p.o.Dialect.FailAction(resp.body); err == nil {
			resp.body = rewritten
		}
	}
	write(w, resp.status, resp.header, resp.body)
}

// route names the dialect route of r ("" for none).
func (p *Proxy) route(r *http.Request) Route {
	h, _ := p.mux.Handler(r)
	if name, ok := h.(routeName); ok {
		return Route(name)
	}
	return ""
}

// decide counts the request and pops the faults armed for its route; a
// request that would reach the API over the budget gets a refusal
// instead. The budget is taken here, before the request is sent, so
// concurrent requests cannot overrun it.
func (p *Proxy) decide(route Route, hook bool) (fault, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var f fault
	if !hook {
		p.calls++
		switch {
		case time.Now().Before(p.rateUntil):
			f.rateReset = p.rateUntil
			return f, nil
		case len(p.fail[route]) > 0:
			f.status, p.fail[route] = p.fail[route][0], p.fail[route][1:]
			return f, nil
		case pop(p.hang, route):
			f.hang = true
			return f, nil
		}
		f.delay = p.latency[route]
		f.drop = pop(p.drop, route)
		f.failAction = pop(p.actionFail, route)
	}
	if limit := p.o.MaxRequests; limit > 0 && p.forwarded >= limit {
		return fault{}, p.overrun(fmt.Errorf("the request budget of %d is spent", limit))
	}
	create := route != "" && route == p.o.Dialect.Ops[provider.VerbCreate]
	if limit := p.o.MaxMachines; create && limit > 0 && p.creates >= limit {
		return fault{}, p.overrun(fmt.Errorf("the machine budget of %d is spent", limit))
	}
	p.forwarded++
	if create {
		p.creates++
	}
	return f, nil
}

// overrun notes err as the proxy's first error and returns it.
func (p *Proxy) overrun(err error) error {
	if p.err == nil {
		p.err = err
	}
	return err
}

// pop takes one armed count of route, reporting whether there was one.
func pop(m map[Route]int, route Route) bool {
	if m[route] == 0 {
		return false
	}
	m[route]--
	return true
}

// observe notes the machine a create made.
func (p *Proxy) observe(route Route, resp *response) {
	if route == "" || route != p.o.Dialect.Ops[provider.VerbCreate] || resp.status/100 != 2 || p.o.Dialect.Created == nil {
		return
	}
	if id := p.o.Dialect.Created(resp.body); id != "" {
		p.mu.Lock()
		p.made = append(p.made, id)
		p.mu.Unlock()
	}
}

// response is an upstream (or replayed) response, read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// exchange forwards r (its body read as body) to the upstream, or
// answers it from the replay, and records the exchange.
func (p *Proxy) exchange(r *http.Request, body []byte, hook bool) (*response, error) {
	req := recordedRequest(r, body, hook, p.o.Dialect.SecretFields)
	if p.o.Replay != nil {
		resp, err := p.o.Replay.answer(req)
		if err != nil {
			p.mu.Lock()
			_ = p.overrun(err)
			p.mu.Unlock()
		}
		return resp, err
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstreamURL(r), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Header.Del(HookHeader)
	res, err := p.o.Transport.RoundTrip(out)
	if err != nil {
		return nil, fmt.Errorf("the API did not answer: %w", err)
	}
	defer func() { _ = res.Body.Close() }()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("read the API's response: %w", err)
	}
	resp := &response{status: res.StatusCode, header: res.Header.Clone(), body: data}
	if p.o.Record != nil {
		p.o.Record.add(req, resp, p.o.Dialect.SecretFields)
	}
	return resp, nil
}

// upstreamURL is r's URL on the upstream: its host and scheme, r's path
// and query (r's path already starts with the base path).
func (p *Proxy) upstreamURL(r *http.Request) string {
	u := *p.o.Upstream
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	return u.String()
}

// write sends a response.
func write(w http.ResponseWriter, status int, h http.Header, body []byte) {
	for k, vs := range h {
		if strings.EqualFold(k, "Content-Length") {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// RefusalHeader carries, on a request the budget refused (503 with the
// dialect's error body), why.
const RefusalHeader = "X-Conformance-Refusal"

// writeRefusal answers a request over the budget: 503, the dialect's
// error body, and the reason in RefusalHeader.
func writeRefusal(w http.ResponseWriter, render func(int) (http.Header, []byte), err error) {
	h, b := render(http.StatusServiceUnavailable)
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(RefusalHeader, err.Error())
	write(w, http.StatusServiceUnavailable, h, b)
}

// dropConnection closes the client's connection without a response.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http closes the connection unanswered
}
