package robot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	hrobot "github.com/syself/hrobot-go"
	"github.com/syself/hrobot-go/models"

	"better-compute.io/compute/pkg/metrics"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

// session is one provider call's webservice client: hrobot-go with the
// call's credentials, over a transport that binds every request to the
// call's context and records what the webservice answered (hrobot-go
// keeps only an error's code and message).
type session struct {
	api hrobot.RobotClient
	rec *recorder
	// hc, endpoint, user and pass make the requests hrobot-go has no
	// method for (getJSON); user and pass are never logged.
	hc         *http.Client
	endpoint   string
	user, pass string
}

// newSession resolves the account's user and password for this call only.
func (c *client) newSession(ctx context.Context, call *provider.Call) (*session, error) {
	user, err := call.Secret(ctx, FieldUser)
	if err != nil {
		return nil, err
	}
	pass, err := call.Secret(ctx, FieldPassword)
	if err != nil {
		return nil, err
	}
	// counted in the provider HTTP metrics: server numbers, IPs and key
	// fingerprints are {id} in the route ("/boot/{id}/rescue")
	next := metrics.ProviderTransport(ProviderID, metrics.EndpointRoute(c.s.endpoint), c.s.httpClient.Transport)
	rec := &recorder{ctx: ctx, next: next, touched: false, call: call, ledger: c.s.ledgers.of(call.Account.ID)}
	hc := &http.Client{Transport: rec, Timeout: c.s.httpClient.Timeout}
	api := hrobot.NewBasicAuthClientWithCustomHttpClient(user, pass, hc)
	api.SetBaseURL(c.s.endpoint)
	api.SetUserAgent("better-compute/" + Version)
	return &session{api: api, rec: rec, hc: hc, endpoint: c.s.endpoint, user: user, pass: pass}, nil
}

// getJSON sends GET path (e.g. "/order/server/product/EX44") with the
// session's login and decodes a 200 reply into out. A failure reply is
// the webservice's models.Error (code and message), as hrobot-go returns
// it, for isCode and classify.
func (s *session) getJSON(path string, out any) error {
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(s.endpoint, "/")+path, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(s.user, s.pass)
	req.Header.Set("User-Agent", "better-compute/"+Version)
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var f failureBody
		if json.Unmarshal(body, &f) == nil && f.Error.Code != "" {
			return models.Error{Code: models.ErrorCode(f.Error.Code), Message: f.Error.Message}
		}
		return fmt.Errorf("server responded with status code %d", resp.StatusCode)
	}
	return json.Unmarshal(body, out)
}

// recorder is the transport of one session.
type recorder struct {
	ctx  context.Context
	next http.RoundTripper
	// call observes the account's rate limit after every request the
	// ledger counts (a server endpoint's).
	call   *provider.Call
	ledger *ledger

	mu sync.Mutex
	// last is the failure body of the last reply (nil after a success).
	last *failureBody
	// status is the HTTP status of the last reply (0: none).
	status int
	// sshPort is the emulator-only SSH port of the last GET /server/{n}.
	sshPort string
	// touched is set once a request may have changed something: a reply
	// that is not a 4xx, or a transport error after the request was sent.
	touched bool
	// requests counts the requests sent.
	requests int
}

// failureBody is the webservice's error body, with the rate-limit and
// block fields.
type failureBody struct {
	Error struct {
		Status     int    `json:"status"`
		Code       string `json:"code"`
		Message    string `json:"message"`
		MaxRequest int    `json:"max_request"`
		Interval   int    `json:"interval"`
		BlockedFor int    `json:"blocked_for"`
	} `json:"error"`
}

// RoundTrip sends req within the call's context and records the reply.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req.WithContext(r.ctx))
	if serverEndpoint(req) && (err == nil || !provider.Unsent(err)) {
		r.call.ObserveRateLimit(r.ledger.add(r.call.Clock.Now()))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		if !provider.Unsent(err) {
			r.touched = true
		}
		return nil, err
	}
	r.status, r.last = resp.StatusCode, nil
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		r.touched = true
	}
	if p := resp.Header.Get(emulator.SSHPortHeader); p != "" {
		r.sshPort = p
	}
	if resp.StatusCode >= 400 {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if rerr == nil {
			var f failureBody
			if json.Unmarshal(body, &f) == nil {
				r.last = &f
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

// failure is the last reply's status and error body (nil body when it
// had none that parsed).
func (r *recorder) failure() (int, *failureBody) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.last
}

// untouched reports whether no request of the session may have changed
// anything.
func (r *recorder) untouched() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.touched
}

// port is the emulator's SSH port of the last server read, as a number
// ("" when none was reported).
func (r *recorder) port() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := strconv.Atoi(r.sshPort); err != nil {
		return ""
	}
	return r.sshPort
}
