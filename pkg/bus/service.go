package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
)

// Handler serves one request. It returns the reply value (JSON-encoded; nil
// answers {}) or an error (a *api.ComputeError; any other error is INTERNAL).
// ctx ends at the caller's deadline.
type Handler func(ctx context.Context, req *Request) (any, error)

// Request is one request as a Handler sees it.
type Request struct {
	// Subject the request arrived on.
	Subject string
	// Tenant is the subject's tenant token for public subjects, "" otherwise.
	Tenant string
	// Data is the raw body.
	Data []byte
	// RequestID is the caller's Compute-Request-Id header (or a new id).
	RequestID string
	// Log is the service logger with the request id, subject and tenant set.
	Log zerolog.Logger
	// ReplyHeader is sent with the reply, success or failure; handlers may set it.
	ReplyHeader nats.Header
}

// Decode strictly decodes the body into v (see Decode) and, for public
// subjects, checks that a tenantId in the body equals the subject's tenant
// (ACCESS_DENIED naming tenantId otherwise).
func (r *Request) Decode(v any) error {
	if err := Decode(r.Data, v); err != nil {
		return err
	}
	if r.Tenant == "" {
		return nil
	}
	var body struct {
		TenantID string `json:"tenantId"`
	}
	_ = json.Unmarshal(r.Data, &body) // already decoded strictly above
	if body.TenantID != "" && body.TenantID != r.Tenant {
		return api.Errorf(api.CodeAccessDenied, "tenantId %q does not match the subject's tenant %q", body.TenantID, r.Tenant).With(api.DetailPath, "tenantId")
	}
	return nil
}

// Endpoint is one micro endpoint: a name (letters, digits, - and _) and the
// subject it serves, possibly with wildcards ("compute.v1.*.pools.create").
type Endpoint struct {
	Name    string
	Subject string
	Handler Handler
}

// ServiceConfig configures StartService.
type ServiceConfig struct {
	// Name and Version identify the micro service (`nats micro ls`).
	Name, Version, Description string
	// Endpoints served, all in the default queue group so replicas share load.
	Endpoints []Endpoint
	// Workers bounds the handlers running at once (default 64). When all are
	// busy, delivery waits: back-pressure instead of unbounded goroutines.
	Workers int
	// Logger receives one line per failed request (and one per success at debug).
	Logger zerolog.Logger
}

// Service is a running micro service with its worker pool.
type Service struct {
	micro micro.Service
	sem   chan struct{}
	log   zerolog.Logger
	// mu orders wg.Add against Stop's wg.Wait: micro keeps delivering a
	// drained subscription's pending requests after its Stop returns.
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// StartService registers cfg's endpoints as a micro service on nc. Each
// request runs on a worker goroutine with a context ending at the caller's
// deadline; a request whose deadline already passed is dropped unanswered
// (its caller has gone), and so is one whose reply subject is not an inbox
// (IsInbox). A panicking handler answers INTERNAL. It returns once the
// server has the endpoints' subscriptions (when nc is connected).
func StartService(nc *nats.Conn, cfg ServiceConfig) (*Service, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 64
	}
	ms, err := micro.AddService(nc, micro.Config{Name: cfg.Name, Version: cfg.Version, Description: cfg.Description})
	if err != nil {
		return nil, fmt.Errorf("start service %s: %w", cfg.Name, err)
	}
	s := &Service{micro: ms, sem: make(chan struct{}, cfg.Workers), log: cfg.Logger.With().Str("service", cfg.Name).Logger()}
	for _, ep := range cfg.Endpoints {
		if err := ms.AddEndpoint(ep.Name, s.dispatch(ep.Handler), micro.WithEndpointSubject(ep.Subject)); err != nil {
			_ = ms.Stop()
			return nil, fmt.Errorf("service %s endpoint %s: %w", cfg.Name, ep.Name, err)
		}
	}
	// Return once the server has the subscriptions: a caller on another
	// connection would otherwise race them and find no responders. A
	// connection not up yet subscribes when it connects.
	if nc.IsConnected() {
		if err := nc.FlushTimeout(5 * time.Second); err != nil {
			s.log.Warn().Err(err).Msg("subscriptions not confirmed by the server")
		}
	}
	return s, nil
}

// Micro is the underlying micro service (info, stats).
func (s *Service) Micro() micro.Service { return s.micro }

// Stop drains the endpoints and waits for running handlers to finish.
// Requests still delivered after it began are answered UNAVAILABLE.
func (s *Service) Stop() error {
	err := s.micro.Stop()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// begin counts a request in unless the service stopped.
func (s *Service) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Service) dispatch(h Handler) micro.HandlerFunc {
	return func(mr micro.Request) {
		if reply := mr.Reply(); reply != "" && !IsInbox(reply) {
			s.log.Warn().Str("subject", mr.Subject()).Str("reply", reply).Msg("request dropped: its reply subject is not an inbox")
			return
		}
		ctx, cancel, expired := requestContext(mr.Headers())
		if expired {
			cancel()
			return
		}
		if !s.begin() {
			cancel()
			if err := respondError(mr, api.Errorf(api.CodeUnavailable, "service is stopping"), nil); err != nil {
				s.log.Warn().Err(err).Msg("reply not sent")
			}
			return
		}
		s.sem <- struct{}{}
		go func() {
			defer func() { <-s.sem; s.wg.Done(); cancel() }()
			s.serve(ctx, h, mr)
		}()
	}
}

// requestContext derives the handler context from the Compute-Deadline
// header (DefaultTimeout when absent) and reports a deadline already past.
func requestContext(h micro.Headers) (context.Context, context.CancelFunc, bool) {
	deadline := time.Now().Add(DefaultTimeout)
	if ms, err := strconv.ParseInt(nats.Header(h).Get(DeadlineHeader), 10, 64); err == nil {
		deadline = time.UnixMilli(ms)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	return ctx, cancel, !time.Now().Before(deadline)
}

func (s *Service) serve(ctx context.Context, h Handler, mr micro.Request) {
	req := &Request{Subject: mr.Subject(), Tenant: TenantOf(mr.Subject()), Data: mr.Data(),
		RequestID: nats.Header(mr.Headers()).Get(RequestIDHeader), ReplyHeader: nats.Header{}}
	if req.RequestID == "" {
		req.RequestID = api.NewID("req_")
	}
	logCtx := s.log.With().Str("request_id", req.RequestID).Str("subject", req.Subject)
	if req.Tenant != "" { // internal subjects carry none; their handlers add the tenant they serve
		logCtx = logCtx.Str("tenant", req.Tenant)
	}
	req.Log = logCtx.Logger()
	ctx = WithRequestID(ctx, req.RequestID)
	start := time.Now()

	out, err := s.call(ctx, h, req)
	if err != nil {
		ce := handlerError(err)
		req.Log.Warn().Str("code", string(ce.Code)).Str("error", ce.Message).Int64("elapsed_ms", time.Since(start).Milliseconds()).Msg("request failed")
		if rErr := respondError(mr, ce, req.ReplyHeader); rErr != nil {
			req.Log.Warn().Err(rErr).Msg("reply not sent")
		}
		return
	}
	if out == nil {
		out = api.Empty{}
	}
	if rErr := mr.RespondJSON(out, micro.WithHeaders(micro.Headers(req.ReplyHeader))); rErr != nil {
		req.Log.Warn().Err(rErr).Msg("reply not sent")
		return
	}
	req.Log.Debug().Int64("elapsed_ms", time.Since(start).Milliseconds()).Msg("request served")
}

// handlerError is the ComputeError a handler's error answers: a foreign
// error carrying a context's end (the request's deadline passed, so the
// handler stopped) is UNAVAILABLE, retryable like a timeout; any other
// foreign error is INTERNAL.
func handlerError(err error) *api.ComputeError {
	ce := api.AsComputeError(err)
	if ce.Code == api.CodeInternal && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return api.Errorf(api.CodeUnavailable, "request deadline passed: %s", ce.Message)
	}
	return ce
}

// respondError answers ce with the handler's reply headers (e.g. the
// provider API's rate-limit state, which matters most on a 429), micro's
// error headers and our body. It does not use mr.Error: Error records the
// failure in a field micro reads, unlocked, once the dispatching callback
// returns, which races with a worker goroutine. The price: `nats micro
// stats` does not count these errors.
func respondError(mr micro.Request, ce *api.ComputeError, reply nats.Header) error {
	code, text, body := EncodeError(ce)
	hdr := micro.Headers{micro.ErrorHeader: {text}, micro.ErrorCodeHeader: {code}}
	for k, v := range reply {
		if _, set := hdr[k]; !set {
			hdr[k] = v
		}
	}
	return mr.Respond(body, micro.WithHeaders(hdr))
}

// call runs h, turning a panic into INTERNAL. The panic value is not logged:
// it may hold request data, secrets included; the stack names the place.
func (s *Service) call(ctx context.Context, h Handler, req *Request) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			req.Log.Error().Str("panic_type", fmt.Sprintf("%T", p)).Bytes("stack", debug.Stack()).Msg("handler panicked")
			out, err = nil, api.Errorf(api.CodeInternal, "internal error (request %s)", req.RequestID)
		}
	}()
	if req.Tenant != "" && !api.ValidTenant(req.Tenant) {
		return nil, api.InvalidInput("subject", "tenant %q is not a valid tenant id ([a-z0-9][a-z0-9-]{0,62})", req.Tenant)
	}
	return h(ctx, req)
}
