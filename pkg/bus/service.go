package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/metrics"
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
		return api.Errorf(api.CodeAccessDenied, "tenantId %q does not match the subject's tenant %q", body.TenantID, r.Tenant).
			WithPath("tenantId")
	}
	return nil
}

// Endpoint is one micro endpoint: a name (EndpointName) and the subject
// it serves, possibly with wildcards ("compute.v1.*.pools.create").
type Endpoint struct {
	Name    string
	Subject string
	Handler Handler
}

// EndpointName is the one naming convention of every service's endpoints
// (`nats micro info <service>`): "<resource>-<verb>", the last two tokens
// of a command or internal subject ("pools-create", "secrets-resolve"),
// "provider-<verb>" for a provider's verbs. A create's idempotency records
// are named by it too (IdempotencyID).
func EndpointName(resource, verb string) string { return resource + "-" + verb }

// CommandEndpoint is the endpoint named EndpointName(resource, verb) serving
// the public command resource.verb of every tenant (Command("*", …)).
func CommandEndpoint(resource, verb string, h Handler) Endpoint {
	return Endpoint{Name: EndpointName(resource, verb), Subject: Command("*", resource, verb), Handler: h}
}

// ServiceConfig configures StartService.
type ServiceConfig struct {
	// Name (letters, digits, - and _), Version (SemVer) and Description
	// identify the micro service (`nats micro ls`).
	Name, Version, Description string
	// Endpoints served, all in the default queue group so replicas share load.
	Endpoints []Endpoint
	// Workers bounds the handlers running at once (default 64). They are
	// shared tenant-fair: each tenant's requests queue apart, a worker that
	// comes free takes the tenants' requests in turn, and one tenant holds
	// at most Workers less an eighth of them (fairPool). When 16 requests
	// per worker are queued, delivery waits: back-pressure instead of
	// unbounded goroutines.
	Workers int
	// Logger receives one line per failed request (and one per success at debug).
	Logger zerolog.Logger
	// Quotas, when set, bounds each tenant's list verbs (every endpoint
	// whose verb is "list") in flight at once by its
	// quotas.concurrentLists (Quotas.AdmitList): the excess is answered
	// RATE_LIMITED at once, before it takes a worker, so one tenant's list
	// flood cannot hold every worker of the service.
	Quotas *Quotas
	// OnStop, when set, is called once by Stop after the last request in
	// flight was answered: it stops what only the handlers use (a list
	// index, NewListIndex).
	OnStop func()
}

// Service is a running micro service with its worker pool. It speaks the
// NATS micro protocol itself (endpoints in queue group "q"; PING, INFO and
// STATS on the $SRV subjects, in the nats.go/micro wire types) instead of
// using nats.go/micro's service: micro counts a request, its error and its
// processing time when its handler returns, and ours return as soon as a
// worker has the request, so micro's STATS would show every reply's error
// as none and its time as microseconds.
type Service struct {
	nc        *nats.Conn
	cfg       ServiceConfig
	id        string
	started   time.Time
	endpoints []*endpoint
	subs      []*nats.Subscription // endpoints' first, then the $SRV verbs'
	pool      *fairPool
	log       zerolog.Logger
	// mu orders wg.Add against Stop's wg.Wait: a drained subscription keeps
	// delivering its pending requests after Drain returns.
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// endpoint is a served Endpoint with its STATS counters; service names
// its service in the request metrics.
type endpoint struct {
	Endpoint
	service string
	mu      sync.Mutex
	stats   micro.EndpointStats
}

// serviceName is what micro accepts as a service or endpoint name.
var serviceName = regexp.MustCompile(`^[A-Za-z0-9\-_]+$`)

// StartService serves cfg's endpoints as a micro service on nc. Each
// request runs on a worker goroutine with a context ending at the caller's
// deadline; a request whose deadline already passed is dropped unanswered
// (its caller has gone), and so is one whose reply subject is not an inbox
// (IsInbox). A panicking handler answers INTERNAL. $SRV.STATS counts, per
// endpoint, every request delivered, every error reply or dropped request
// (last_error "<status>:<message>", as micro's) and the time from delivery
// until the reply. It returns once the server has the subscriptions (when
// nc is connected).
func StartService(nc *nats.Conn, cfg ServiceConfig) (*Service, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 64
	}
	if !serviceName.MatchString(cfg.Name) {
		return nil, fmt.Errorf("start service %q: a name is letters, digits, - and _", cfg.Name)
	}
	s := &Service{nc: nc, cfg: cfg, id: api.NewID("svc_"), started: time.Now().UTC(), pool: newFairPool(cfg.Workers),
		log: cfg.Logger.With().Str("service", cfg.Name).Logger()}
	if err := s.subscribe(); err != nil {
		_ = s.unsubscribe()
		return nil, err
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

// subscribe subscribes the endpoints and the $SRV verbs: each verb on the
// subject of all services, of this service's name and of its id.
func (s *Service) subscribe() error {
	for _, e := range s.cfg.Endpoints {
		if !serviceName.MatchString(e.Name) {
			return fmt.Errorf("service %s endpoint %q: a name is letters, digits, - and _", s.cfg.Name, e.Name)
		}
		ep := &endpoint{Endpoint: e, service: s.cfg.Name,
			stats: micro.EndpointStats{Name: e.Name, Subject: e.Subject, QueueGroup: micro.DefaultQueueGroup}}
		sub, err := s.nc.QueueSubscribe(e.Subject, micro.DefaultQueueGroup, s.dispatch(ep))
		if err != nil {
			return fmt.Errorf("service %s endpoint %s: %w", s.cfg.Name, e.Name, err)
		}
		s.endpoints = append(s.endpoints, ep)
		s.subs = append(s.subs, sub)
	}
	verbs := []struct {
		verb  micro.Verb
		reply func() any
	}{{micro.PingVerb, s.ping}, {micro.InfoVerb, s.info}, {micro.StatsVerb, s.stats}}
	for _, v := range verbs {
		for _, who := range [][2]string{{"", ""}, {s.cfg.Name, ""}, {s.cfg.Name, s.id}} {
			subject, err := micro.ControlSubject(v.verb, who[0], who[1])
			if err != nil {
				return fmt.Errorf("service %s: %w", s.cfg.Name, err)
			}
			sub, err := s.nc.Subscribe(subject, func(m *nats.Msg) {
				if !IsInbox(m.Reply) {
					// As for endpoints: never publish onto a subject that is
					// not a caller's inbox (a forged reply such as an event).
					s.log.Warn().Str("subject", m.Subject).Str("reply", m.Reply).Msg("request dropped: its reply subject is not an inbox")
					return
				}
				body, _ := json.Marshal(v.reply()) // micro's wire types always encode
				if err := m.Respond(body); err != nil {
					s.log.Warn().Err(err).Str("subject", subject).Msg("reply not sent")
				}
			})
			if err != nil {
				return fmt.Errorf("service %s %s: %w", s.cfg.Name, subject, err)
			}
			s.subs = append(s.subs, sub)
		}
	}
	return nil
}

// unsubscribe drains every subscription: requests already delivered are
// still dispatched (and answered UNAVAILABLE once Stop has begun).
func (s *Service) unsubscribe() error {
	var errs []error
	for _, sub := range s.subs {
		if err := sub.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, fmt.Errorf("drain %s: %w", sub.Subject, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Service) identity() micro.ServiceIdentity {
	return micro.ServiceIdentity{Name: s.cfg.Name, ID: s.id, Version: s.cfg.Version, Metadata: map[string]string{}}
}

func (s *Service) ping() any {
	return micro.Ping{ServiceIdentity: s.identity(), Type: micro.PingResponseType}
}

func (s *Service) info() any {
	info := micro.Info{ServiceIdentity: s.identity(), Type: micro.InfoResponseType, Description: s.cfg.Description,
		Endpoints: make([]micro.EndpointInfo, 0, len(s.endpoints))}
	for _, ep := range s.endpoints {
		info.Endpoints = append(info.Endpoints, micro.EndpointInfo{Name: ep.Name, Subject: ep.Subject, QueueGroup: micro.DefaultQueueGroup})
	}
	return info
}

func (s *Service) stats() any {
	stats := micro.Stats{ServiceIdentity: s.identity(), Type: micro.StatsResponseType, Started: s.started,
		Endpoints: make([]*micro.EndpointStats, 0, len(s.endpoints))}
	for _, ep := range s.endpoints {
		ep.mu.Lock()
		st := ep.stats
		ep.mu.Unlock()
		stats.Endpoints = append(stats.Endpoints, &st)
	}
	return stats
}

// record counts one request of ep, answered (or dropped) after elapsed,
// in its STATS and in the request metrics (metrics.BusRequests, by code:
// metrics.CodeOK, the error's code or metrics.CodeDropped); failure is
// its error ("" for a success).
func (ep *endpoint) record(elapsed time.Duration, code, failure string) {
	metrics.BusRequests.WithLabelValues(ep.service, ep.Name, code).Inc()
	metrics.BusRequestDuration.WithLabelValues(ep.service, ep.Name, code).Observe(elapsed.Seconds())
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.stats.NumRequests++
	ep.stats.ProcessingTime += elapsed
	ep.stats.AverageProcessingTime = ep.stats.ProcessingTime / time.Duration(ep.stats.NumRequests)
	if failure != "" {
		ep.stats.NumErrors++
		ep.stats.LastError = failure
	}
}

// Stop drains the endpoints and waits for running handlers to finish.
// Requests still delivered after it began are answered UNAVAILABLE.
func (s *Service) Stop() error {
	err := s.unsubscribe()
	s.mu.Lock()
	first := !s.stopped
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
	if first && s.cfg.OnStop != nil {
		s.cfg.OnStop()
	}
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

func (s *Service) dispatch(ep *endpoint) nats.MsgHandler {
	return func(m *nats.Msg) {
		delivered := time.Now()
		// A request without a reply subject is dropped too: every caller
		// waits for an answer, and a service's reply that a caller aimed
		// at a verb subject (its reply subject set to it) arrives as a
		// request without one: a verb the caller may not publish.
		if !IsInbox(m.Reply) {
			s.log.Warn().Str("subject", m.Subject).Str("reply", m.Reply).Msg("request dropped: its reply subject is not an inbox")
			ep.record(time.Since(delivered), metrics.CodeDropped, "dropped: the reply subject is not an inbox")
			return
		}
		ctx, cancel, expired := requestContext(m.Header)
		if expired {
			cancel()
			ep.record(time.Since(delivered), metrics.CodeDropped, "dropped: the caller's deadline had passed")
			return
		}
		if !s.begin() {
			cancel()
			if err := s.reply(ep, m, delivered, nil, nil, api.Errorf(api.CodeUnavailable, "service is stopping")); err != nil {
				s.log.Warn().Err(err).Msg("reply not sent")
			}
			return
		}
		admitted, ce := s.admit(ep, m.Subject)
		if ce != nil {
			cancel()
			s.wg.Done()
			if err := s.reply(ep, m, delivered, nil, nil, ce); err != nil {
				s.log.Warn().Err(err).Msg("reply not sent")
			}
			return
		}
		s.pool.submit(TenantOf(m.Subject), func() {
			defer func() { admitted(); s.wg.Done(); cancel() }()
			if ctx.Err() != nil { // the caller's deadline passed while it was queued
				ep.record(time.Since(delivered), metrics.CodeDropped, "dropped: the caller's deadline had passed")
				return
			}
			s.serve(ctx, ep, m, delivered)
		})
	}
}

// admit counts a request of a list endpoint in with its tenant's
// concurrent-list quota (ServiceConfig.Quotas); admitted counts it out. A
// refusal gives the caller its turn (Quotas.AdmitList) from the endpoint's
// mean time to answer, within minListRetryAfter and maxListRetryAfter.
func (s *Service) admit(ep *endpoint, subject string) (admitted func(), ce *api.ComputeError) {
	if !strings.HasSuffix(ep.Name, "-list") {
		return func() {}, nil
	}
	ep.mu.Lock()
	mean := ep.stats.AverageProcessingTime
	ep.mu.Unlock()
	admitted, err := s.cfg.Quotas.AdmitList(TenantOf(subject), min(max(mean, minListRetryAfter), maxListRetryAfter))
	if err != nil {
		return nil, api.AsComputeError(err)
	}
	return admitted, nil
}

// The bounds of the mean time to answer a list from which a refused list's
// turn is reckoned (Quotas.AdmitList).
const (
	minListRetryAfter = 50 * time.Millisecond
	maxListRetryAfter = 5 * time.Second
)

// requestContext derives the handler context from the Compute-Deadline
// header (DefaultTimeout when absent) and reports a deadline already past.
func requestContext(h nats.Header) (context.Context, context.CancelFunc, bool) {
	deadline := time.Now().Add(DefaultTimeout)
	if ms, err := strconv.ParseInt(h.Get(DeadlineHeader), 10, 64); err == nil {
		deadline = time.UnixMilli(ms)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	return ctx, cancel, !time.Now().Before(deadline)
}

func (s *Service) serve(ctx context.Context, ep *endpoint, m *nats.Msg, delivered time.Time) {
	req := &Request{Subject: m.Subject, Tenant: TenantOf(m.Subject), Data: m.Data,
		RequestID: m.Header.Get(RequestIDHeader), ReplyHeader: nats.Header{}}
	if req.RequestID == "" {
		req.RequestID = api.NewID("req_")
	}
	logCtx := s.log.With().Str("request_id", req.RequestID).Str("subject", req.Subject)
	if req.Tenant != "" { // internal subjects carry none; their handlers add the tenant they serve
		logCtx = logCtx.Str("tenant", req.Tenant)
	}
	req.Log = logCtx.Logger()
	ctx = WithRequestID(ctx, req.RequestID)

	out, err := s.call(ctx, ep.Handler, req)
	if err != nil {
		ce := handlerError(err)
		// A caller's mistake or a normal answer (NOT_FOUND after a delete,
		// INVALID_INPUT) is information; the service's own trouble warns.
		level := zerolog.InfoLevel
		if StatusOf(ce.Code) >= 500 {
			level = zerolog.WarnLevel
		}
		req.Log.WithLevel(level).Str("code", string(ce.Code)).Str("error", ce.Message).
			Int64("elapsed_ms", time.Since(delivered).Milliseconds()).Msg("request failed")
		if rErr := s.reply(ep, m, delivered, req.ReplyHeader, nil, ce); rErr != nil {
			req.Log.Warn().Err(rErr).Msg("reply not sent")
		}
		return
	}
	if out == nil {
		out = api.Empty{}
	}
	if rErr := s.reply(ep, m, delivered, req.ReplyHeader, out, nil); rErr != nil {
		req.Log.Warn().Err(rErr).Msg("reply not sent")
		return
	}
	req.Log.Debug().Int64("elapsed_ms", time.Since(delivered).Milliseconds()).Msg("request served")
}

// reply answers m with header hdr (the handler's ReplyHeader, e.g. a
// provider API's rate-limit state, which matters most on a 429) and out as
// JSON or, when ce is not nil, micro's error headers (they win over hdr's)
// and our {"error":{…}} body. It counts the request in ep's stats first,
// so a caller asking STATS after its reply finds its request counted; a
// reply that cannot be encoded answers INTERNAL.
func (s *Service) reply(ep *endpoint, m *nats.Msg, delivered time.Time, hdr nats.Header, out any, ce *api.ComputeError) error {
	msg := &nats.Msg{Header: nats.Header{}}
	maps.Copy(msg.Header, hdr)
	if raw, ok := out.(RawJSON); ok && ce == nil {
		msg.Data = raw // encoded already (Index.ListJSON)
	} else if ce == nil {
		body, err := json.Marshal(out)
		if err != nil {
			ce = api.Errorf(api.CodeInternal, "reply of %s could not be encoded", ep.Name)
		}
		msg.Data = body
	}
	failure, code := "", metrics.CodeOK
	if ce != nil {
		status, text, body := EncodeError(ce)
		msg.Header[micro.ErrorHeader], msg.Header[micro.ErrorCodeHeader], msg.Data = []string{text}, []string{status}, body
		failure, code = status+":"+text, metrics.CodeLabel(ce.Code)
	}
	ep.record(time.Since(delivered), code, failure)
	return m.RespondMsg(msg)
}

// RawJSON is a handler's reply encoded already (Index.ListJSON): the
// service sends its bytes as they are, neither checked nor encoded again,
// so they must be valid JSON of the reply's wire type.
type RawJSON []byte

// MarshalJSON returns r itself ("null" when empty), so that encoding a
// RawJSON anywhere else gives its JSON, not base64.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
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
