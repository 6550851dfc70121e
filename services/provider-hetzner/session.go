package hetzner

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/metrics"
	"better-compute.io/compute/pkg/provider"
)

// session is one provider call's use of the API: an hcloud client built
// for the call with the call's token, and a recorder counting its requests.
type session struct {
	api  *hcloud.Client
	call *provider.Call
	set  *settings
	rec  *recorder
	op   string
	// serverID is set by calls about one server: a 404 then means NOT_FOUND.
	serverID string
	// batched is how many lookups a batched request answers (0: none).
	batched int
}

// open resolves the account's token and builds the call's hcloud client
// (hcloud-go's retries off: the reconciler owns the retry policy).
// Errors: those of the secret resolver; INVALID_CONFIG naming config.token
// when the value cannot be an API token.
func (c *client) open(ctx context.Context, call *provider.Call, op string) (*session, error) {
	token, err := call.Secret(ctx, FieldToken)
	if err != nil {
		return nil, err
	}
	if !provider.HeaderSafe(token) {
		return nil, api.InvalidConfig("config."+FieldToken,
			"the token reference resolves to a value that is not an API token (printable ASCII without spaces)")
	}
	base := metrics.ProviderTransport(ProviderID, metrics.EndpointRoute(c.set.endpoint), c.set.httpClient.Transport)
	rec := &recorder{base: base, clock: call.Clock, observe: func(rl api.RateLimit) {
		call.ObserveRateLimit(rl)
		c.budget.set(rl)
	}}
	hc := *c.set.httpClient
	hc.Transport = rec
	return &session{
		api: hcloud.NewClient(
			hcloud.WithEndpoint(c.set.endpoint),
			hcloud.WithToken(token),
			hcloud.WithHTTPClient(&hc),
			hcloud.WithApplication("better-compute-"+ProviderID, Version),
			hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}),
		),
		call: call, set: c.set, rec: rec, op: op,
	}, nil
}

// openServer is open for a call about the server with id: it reads the id
// first (INVALID_INPUT naming "id", before the token is resolved) and
// records it on the session, so that a 404 means NOT_FOUND and the log line
// names the server. It returns the session and the server id.
func (c *client) openServer(ctx context.Context, call *provider.Call, op, id string) (*session, int64, error) {
	sid, err := parseServerID(id)
	if err != nil {
		return nil, 0, err
	}
	s, err := c.open(ctx, call, op)
	if err != nil {
		return nil, 0, err
	}
	s.serverID = id
	return s, sid, nil
}

// done ends the session: it maps err (see classify), reports the HTTP
// request count to the CallCounter and logs one line.
func (s *session) done(ctx context.Context, err error) error {
	err = classify(ctx, err, s.rec, s.serverID, s.call.Clock.Now())
	calls := s.rec.count()
	if s.set.countCalls != nil {
		s.set.countCalls(s.op, calls)
	}
	ev := s.call.CallLog(err)
	ev.Str("op", s.op).Str("server_id", s.serverID).Int("http_calls", calls)
	if s.batched > 0 {
		ev.Int("batch", s.batched)
	}
	ev.Msg("hetzner-cloud call")
	return err
}

// wait polls the action every poll interval (on the call's clock) until
// it is no longer running: GET /actions?id=<id>, or, with batching on, a
// share of the account's GET /actions?id=…&id=… (see fetchActions).
// Errors: PROVIDER_ERROR with details.code = the action's error code when
// it failed, or "action_missing" when the API forgot it; UNAVAILABLE when
// ctx ends; those of the poll.
func (s *session) wait(ctx context.Context, c *client, a *hcloud.Action) error {
	for a.Status == hcloud.ActionStatusRunning {
		if err := provider.Sleep(ctx, s.call.Clock, s.set.pollInterval); err != nil {
			return err
		}
		got, found, err := s.pollAction(ctx, c, a.ID)
		if err != nil {
			return err
		}
		if !found {
			return providerError(http.StatusOK, "action_missing", "hetzner-cloud: action %d (%s) is no longer listed", a.ID, a.Command)
		}
		a = got
	}
	if a.Status == hcloud.ActionStatusError {
		return providerError(http.StatusOK, a.ErrorCode, "hetzner-cloud: action %s (%d) failed: %s", a.Command, a.ID, a.ErrorMessage)
	}
	return nil
}

// pollAction reads action id once: through the account's action batch, or
// alone on the session when batching is off. It reports false when the
// API no longer lists the action.
func (s *session) pollAction(ctx context.Context, c *client, id int64) (*hcloud.Action, bool, error) {
	if c.actions != nil {
		a, found, err := c.actions.Lookup(ctx, s.call, id)
		if ce := (*api.ComputeError)(nil); errors.As(err, &ce) {
			// The shared poll changed nothing, but this call's action did:
			// its own requests decide details.notExecuted (see classify).
			ce.Details.NotExecuted = false
		}
		return a, found, err
	}
	got, _, err := s.api.Action.List(ctx, hcloud.ActionListOpts{ID: []int64{id}})
	if err != nil || len(got) != 1 {
		return nil, false, err
	}
	return got[0], true, nil
}

// recorder is the session's HTTP transport: it counts requests, keeps the
// status and RateLimit-Reset of the last reply, and reports every reply's
// rate-limit state to observe (read on the call's clock).
type recorder struct {
	base    http.RoundTripper
	observe func(api.RateLimit)
	clock   clock.Clock
	mu      sync.Mutex
	calls   int
	status  int
	reset   time.Time
	// acted is set once a request that can change something (not a GET)
	// may have acted: it was sent and not refused with a 4xx.
	acted bool
}

// RoundTrip implements http.RoundTripper.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.calls++
	r.status, r.reset = 0, time.Time{}
	r.mu.Unlock()
	resp, err := r.base.RoundTrip(req)
	if req.Method != http.MethodGet && !refusedOrUnsent(resp, err) {
		r.mu.Lock()
		r.acted = true
		r.mu.Unlock()
	}
	if err != nil {
		return resp, err
	}
	var reset time.Time
	if secs, perr := strconv.ParseInt(resp.Header.Get("RateLimit-Reset"), 10, 64); perr == nil {
		reset = time.Unix(secs, 0)
	}
	if rl, ok := rateLimitOf(resp.Header, reset, r.clock.Now()); ok && r.observe != nil {
		r.observe(rl)
	}
	r.mu.Lock()
	r.status, r.reset = resp.StatusCode, reset
	r.mu.Unlock()
	return resp, nil
}

// untouched reports whether no request of the session may have changed
// anything (see recorder.acted).
func (r *recorder) untouched() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.acted
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// last is the status (0 when the request got no reply) and RateLimit-Reset
// of the last request.
func (r *recorder) last() (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.reset
}

// rateLimitOf reads the project's budget from a reply received at now:
// RateLimit-Limit requests at most, RateLimit-Remaining left now, full
// again at RateLimit-Reset. The refill rate follows from the two: what is
// missing over the time until full (1 per second on Hetzner's 3600 per
// hour); a full bucket says nothing about it, so then the hourly limit is
// spread evenly. An empty bucket's rate is reported all the same; the
// caller knows that an empty bucket may stay closed until its reset (a
// window such as "0 left, full in 20 s" refuses everything before it).
func rateLimitOf(h http.Header, reset, now time.Time) (api.RateLimit, bool) {
	limit, err1 := strconv.Atoi(h.Get("RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("RateLimit-Remaining"))
	if err1 != nil || err2 != nil || limit <= 0 || reset.IsZero() {
		return api.RateLimit{}, false
	}
	refill := float64(limit) / 3600
	if remaining < limit {
		// RateLimit-Reset has whole seconds: a bucket less than a second from
		// full may say "now".
		refill = float64(limit-remaining) / max(reset.Sub(now).Seconds(), 1)
	}
	return api.RateLimit{Limit: limit, Remaining: remaining, RefillPerSecond: refill, ResetAt: reset}, true
}
