package hetzner

import (
	"net/http"
	"net/url"
	"regexp"
	"time"

	"better-compute.io/compute/pkg/api"
)

// Defaults of the options.
const (
	// DefaultEndpoint is the Hetzner Cloud API.
	DefaultEndpoint = "https://api.hetzner.cloud/v1"
	// DefaultLabelPrefix prefixes the labels this provider puts on servers.
	DefaultLabelPrefix = "better-compute.io"
	// DefaultPollInterval is how often an action wait asks GET /actions.
	// Power actions take a few seconds and a rebuild tens of seconds, and a
	// project's rate budget refills at 1 request per second (3600/h shared
	// by every tool of the project): polling once a second adds at most
	// one second of latency and spends no more than the refill rate.
	DefaultPollInterval = time.Second
	// DefaultBatchWindow is how long a get or an action poll waits for
	// others of its account to share one request with (see
	// WithBatchWindow): the reconciler's looks at machines created
	// together arrive within about that, and a lone look is late by it,
	// against boots of several seconds.
	DefaultBatchWindow = 200 * time.Millisecond
	// DefaultHTTPTimeout bounds one HTTP request of the default HTTP client
	// (the call's deadline bounds it too).
	DefaultHTTPTimeout = 60 * time.Second
)

// Option configures Definition.
type Option func(*settings)

// WithEndpoint points the provider at another Hetzner Cloud API endpoint,
// e.g. an emulator's "http://127.0.0.1:PORT/v1" (default DefaultEndpoint).
func WithEndpoint(endpoint string) Option {
	return func(s *settings) { s.endpoint = endpoint }
}

// WithHTTPClient sets the HTTP client shared by every call (its transport's
// connection pool is reused; a nil client keeps the default, which has
// DefaultHTTPTimeout).
func WithHTTPClient(c *http.Client) Option {
	return func(s *settings) {
		if c != nil {
			s.httpClient = c
		}
	}
}

// WithLabelPrefix sets the prefix of the managed and idempotency-key labels
// (a DNS subdomain, default DefaultLabelPrefix). Changing it on a live
// project orphans the servers made under the old prefix.
func WithLabelPrefix(prefix string) Option {
	return func(s *settings) { s.labelPrefix = prefix }
}

// WithPollInterval sets how often action waits poll GET /actions (default
// DefaultPollInterval; must be positive).
func WithPollInterval(d time.Duration) Option {
	return func(s *settings) { s.pollInterval = d }
}

// WithBatchWindow sets how long a get (with an idempotency key) or an
// action poll waits for others of its account before their shared request
// is sent (default DefaultBatchWindow; a batch is sent at once when full:
// 50 gets, one GET /servers page, or 25 action ids). 0 turns batching off:
// every get is GET /servers/{id} and every poll GET /actions?id=<one id>.
// Negative is INVALID_CONFIG.
func WithBatchWindow(d time.Duration) Option {
	return func(s *settings) { s.batchWindow = d }
}

// CallCounter receives, after every provider call, the operation ("offers",
// "create", "get", "delete", "power", "reinstall", "list", "checkpool"; "actions" for
// a batched action poll, which serves power and reinstall waits) and how
// many HTTP requests it sent to the API (failed ones included). A batched
// get request is reported once, as "get".
type CallCounter func(op string, httpCalls int)

// WithCallCounter reports the HTTP requests of every call to f (for
// metrics); f must be safe for concurrent use.
func WithCallCounter(f CallCounter) Option {
	return func(s *settings) { s.countCalls = f }
}

// settings are the options of one Definition, shared by its clients.
type settings struct {
	endpoint     string
	httpClient   *http.Client
	labelPrefix  string
	pollInterval time.Duration
	batchWindow  time.Duration
	countCalls   CallCounter
	// groups is the spread placement state of every account's creates.
	groups *spreadGroups
}

func newSettings(opts []Option) *settings {
	s := &settings{
		endpoint:     DefaultEndpoint,
		httpClient:   &http.Client{Timeout: DefaultHTTPTimeout},
		labelPrefix:  DefaultLabelPrefix,
		pollInterval: DefaultPollInterval,
		batchWindow:  DefaultBatchWindow,
		groups:       &spreadGroups{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// dnsSubdomain is a label key prefix as Hetzner accepts it.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// validate reports the first unusable option: INVALID_CONFIG naming it.
func (s *settings) validate() error {
	u, err := url.Parse(s.endpoint)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return api.InvalidConfig("options.endpoint", "endpoint must be an absolute http(s) URL such as %s", DefaultEndpoint)
	case len(s.labelPrefix) > 253 || !dnsSubdomain.MatchString(s.labelPrefix):
		return api.InvalidConfig("options.labelPrefix", "label prefix must be a DNS subdomain of at most 253 characters")
	case s.pollInterval <= 0:
		return api.InvalidConfig("options.pollInterval", "poll interval must be positive")
	case s.batchWindow < 0:
		return api.InvalidConfig("options.batchWindow", "batch window must not be negative (0 turns batching off)")
	}
	return nil
}
