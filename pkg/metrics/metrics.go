package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"better-compute.io/compute/pkg/api"
)

// Registry is the process's registry: the Go runtime and process
// collectors and every metric below. Services' sampled collectors join
// it with Register.
var Registry = prometheus.NewRegistry()

// Code label values besides ComputeError codes.
const (
	// CodeOK labels a request answered with success.
	CodeOK = "OK"
	// CodeDropped labels a request dropped unanswered (its caller's
	// deadline had passed, or its reply subject is not an inbox).
	CodeDropped = "DROPPED"
	// CodeUnknown labels an error whose code the catalogue does not list
	// (a newer peer's, or a foreign one).
	CodeUnknown = "UNKNOWN"
)

// knownCodes are the catalogue's codes.
var knownCodes = func() map[api.Code]bool {
	m := map[api.Code]bool{}
	for _, c := range api.Codes() {
		m[c] = true
	}
	return m
}()

// CodeLabel is c as a code label value: c when the error catalogue lists
// it, else CodeUnknown, so that a peer's codes cannot grow the label set.
func CodeLabel(c api.Code) string {
	if knownCodes[c] {
		return string(c)
	}
	return CodeUnknown
}

// latencyBuckets (seconds) span a KV read (~1 ms) to a provider call
// that waits for an action (~1 min).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Bus requests, recorded by pkg/bus's service layer for every endpoint of
// every service.
var (
	// BusRequests counts requests by service, endpoint (its EndpointName,
	// not the concrete subject) and code (CodeOK, a ComputeError code as
	// CodeLabel gives it, or CodeDropped).
	BusRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "compute_bus_requests_total",
		Help: "Bus requests served, by service, endpoint and reply code (OK, a ComputeError code, or DROPPED).",
	}, []string{"service", "endpoint", "code"})
	// BusRequestDuration is the time from a request's delivery to its
	// reply, by service, endpoint and code, in seconds.
	BusRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "compute_bus_request_duration_seconds",
		Help:    "Time from a bus request's delivery to its reply, by service, endpoint and reply code.",
		Buckets: latencyBuckets,
	}, []string{"service", "endpoint", "code"})
)

// Provider HTTP calls, recorded by ProviderTransport.
var (
	// ProviderRequests counts provider API requests by provider, method,
	// route (Route's template) and status (the HTTP status, or "error"
	// when no reply came).
	ProviderRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "compute_provider_http_requests_total",
		Help: "Provider API requests, by provider, method, route template and HTTP status (error: no reply).",
	}, []string{"provider", "method", "route", "status"})
	// ProviderRequestDuration is the time until a provider API reply's
	// headers (or the transport's error), in seconds.
	ProviderRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "compute_provider_http_request_duration_seconds",
		Help:    "Time until a provider API reply's headers, by provider, method and route template.",
		Buckets: latencyBuckets,
	}, []string{"provider", "method", "route"})
	// ProviderRateLimited counts provider API replies 429 Too Many
	// Requests, by provider.
	ProviderRateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "compute_provider_http_rate_limited_total",
		Help: "Provider API replies 429 Too Many Requests, by provider.",
	}, []string{"provider"})
)

// Reconciler passes, pacing and resyncs, recorded by services/reconciler.
var (
	// ReconcilePasses counts reconcile passes by outcome (the Outcome
	// constants).
	ReconcilePasses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "compute_reconcile_passes_total",
		Help: "Reconcile passes, by outcome (done, requeued, abandoned, cancelled).",
	}, []string{"outcome"})
	// ReconcileDuration is a pass's duration by outcome, in seconds.
	ReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "compute_reconcile_pass_duration_seconds",
		Help:    "Duration of a reconcile pass, by outcome.",
		Buckets: latencyBuckets,
	}, []string{"outcome"})
	// PacingWaits counts the waits a provider account's rate-limit budget
	// imposed (a pass put back, or a resync's list held), by provider:
	// the budget above the reserve was spent, or its size is not known
	// yet and enough calls are in flight.
	PacingWaits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "compute_reconcile_pacing_waits_total",
		Help: "Waits imposed by a provider account's rate-limit budget, by provider.",
	}, []string{"provider"})
	// PacingWaitSeconds sums those waits, in seconds, by provider.
	PacingWaitSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "compute_reconcile_pacing_wait_seconds_total",
		Help: "Time waited for a provider account's rate-limit budget, by provider.",
	}, []string{"provider"})
	// ResyncDuration is a resync's duration by result (ok or error), in
	// seconds.
	ResyncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "compute_reconcile_resync_duration_seconds",
		Help:    "Duration of a resync over every instance, by result (ok, error).",
		Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300},
	}, []string{"result"})
)

// Outcome label values of ReconcilePasses and ReconcileDuration.
const (
	// OutcomeDone: the work message was acknowledged (converged, deleted,
	// or settled until the spec changes).
	OutcomeDone = "done"
	// OutcomeRequeued: another look is due after a delay (polling,
	// a retry, a rate-limit wait).
	OutcomeRequeued = "requeued"
	// OutcomeAbandoned: the state store failed; redelivery retries.
	OutcomeAbandoned = "abandoned"
	// OutcomeCancelled: the replica is stopping; the work is handed back.
	OutcomeCancelled = "cancelled"
)

// Secrets resolves, recorded by services/secrets.
var (
	// SecretResolves counts secret lookups by verb (resolve: a value
	// handed to a service; check: a reference validated) and outcome
	// (CodeOK or a ComputeError code as CodeLabel gives it). Neither the reference nor its
	// scheme nor the tenant is a label.
	SecretResolves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "compute_secrets_resolves_total",
		Help: "Secret lookups, by verb (resolve, check) and outcome (OK or a ComputeError code).",
	}, []string{"verb", "outcome"})
)

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		BusRequests, BusRequestDuration, ProviderRequests, ProviderRequestDuration, ProviderRateLimited,
		ReconcilePasses, ReconcileDuration, PacingWaits, PacingWaitSeconds, ResyncDuration, SecretResolves)
}

// Register adds a service's collector (its sampled gauges) to Registry
// and returns the function that removes it. Errors: prometheus's
// AlreadyRegisteredError when a collector of the same metrics is
// registered (a second instance of the service in one process: the
// first one's samples are served).
func Register(c prometheus.Collector) (unregister func(), err error) {
	if err := Registry.Register(c); err != nil {
		return nil, err
	}
	return func() { Registry.Unregister(c) }, nil
}
