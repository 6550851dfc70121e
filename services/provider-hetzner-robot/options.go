package robot

import (
	"net/http"
	"net/url"
	"time"

	"better-compute.io/compute/pkg/api"
)

// Defaults of the options.
const (
	// DefaultEndpoint is the Robot webservice.
	DefaultEndpoint = "https://robot-ws.your-server.de"
	// DefaultHTTPTimeout bounds one HTTP request of the default client
	// (the call's deadline bounds it too).
	DefaultHTTPTimeout = 60 * time.Second
	// ClaimPrefix starts the Robot server name of every server this
	// provider claimed; the rest is the claim's idempotency key.
	ClaimPrefix = "compute:"
)

// Option configures Definition.
type Option func(*settings)

// WithEndpoint points the provider at another webservice endpoint, e.g.
// an emulator's "http://127.0.0.1:PORT" (default DefaultEndpoint).
func WithEndpoint(endpoint string) Option { return func(s *settings) { s.endpoint = endpoint } }

// WithHTTPClient sets the HTTP client whose transport every call uses (a
// nil client keeps the default, which has DefaultHTTPTimeout).
func WithHTTPClient(c *http.Client) Option {
	return func(s *settings) {
		if c != nil {
			s.httpClient = c
		}
	}
}

type settings struct {
	endpoint   string
	httpClient *http.Client
	// ledgers count the server endpoints' requests per account (budget.go).
	ledgers ledgers
}

func newSettings(opts []Option) *settings {
	s := &settings{endpoint: DefaultEndpoint, httpClient: &http.Client{Timeout: DefaultHTTPTimeout}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// validate reports an unusable option: INVALID_CONFIG naming it.
func (s *settings) validate() error {
	u, err := url.Parse(s.endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return api.InvalidConfig("options.endpoint", "endpoint must be an absolute http(s) URL such as %s", DefaultEndpoint)
	}
	return nil
}
