package proxmox

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/egress"
)

// Defaults of the options.
const (
	// DefaultTaskPollInterval is how often the waits that do not follow a
	// task's expected duration ask again (a clone another call started, a
	// configuration a concurrent call holds locked). Task waits follow
	// their task type's observed duration unless a poll interval is set
	// (see taskPacer).
	DefaultTaskPollInterval = time.Second
	// DefaultTaskTimeout bounds one task wait (and the wait for a clone
	// another call started); the call's deadline bounds it too.
	DefaultTaskTimeout = 10 * time.Minute
	// DefaultTaskBatchWindow is how long a task poll waits for others of
	// its account to share one node task list with (see
	// WithTaskBatchWindow).
	DefaultTaskBatchWindow = 200 * time.Millisecond
	// DefaultHTTPTimeout bounds one HTTP request of the default HTTP client.
	DefaultHTTPTimeout = 60 * time.Second
)

// SnippetWriter stores userData as a cloud-init snippet called name (a file
// name unique to the VMID and idempotency key, e.g.
// "better-compute-10042-3f2a….yaml") where the cluster reads snippets, and
// returns its volume id, e.g. "local:snippets/better-compute-10042-3f2a….yaml".
// Writing the same name again must replace the file. It runs with the
// call's context and call (for secrets it needs); its errors are returned
// by create as they are (a *api.ComputeError) or as PROVIDER_ERROR.
type SnippetWriter func(ctx context.Context, call *provider.Call, vmid int, name, userData string) (volumeID string, err error)

// CallCounter receives, after every provider call, the operation
// ("offers", "create", "get", "delete", "power", "reinstall", "list";
// "tasks" for a shared task poll, which serves the task waits of every
// call of the account) and how many HTTP requests it sent to the API
// (failed ones included).
type CallCounter func(op string, httpCalls int)

// Option configures Definition.
type Option func(*settings)

// WithSnippetWriter sets how cloud-init user data reaches the cluster.
// Without one, a create with user data or SSH keys answers INVALID_CONFIG.
func WithSnippetWriter(w SnippetWriter) Option {
	return func(s *settings) { s.snippets = w }
}

// WithHTTPClient sets the HTTP client of every account (nil keeps the
// default, which has DefaultHTTPTimeout and keeps up to 16 idle
// connections per cluster). An account's caCert is pinned
// into a clone of the client's *http.Transport (a nil transport means
// http.DefaultTransport); any other transport type cannot be pinned, and
// accounts with a caCert then answer INVALID_CONFIG naming config.caCert.
func WithHTTPClient(c *http.Client) Option {
	return func(s *settings) {
		if c != nil {
			s.httpClient = c
		}
	}
}

// WithEgressPolicy sets the addresses the provider may connect to for any
// account (see package egress), applied to the HTTP client's
// *http.Transport (the default client's, or WithHTTPClient's; another
// transport type makes Definition's clients answer INVALID_CONFIG). Without
// it the default client refuses egress.AlwaysDenied (link-local and cloud
// metadata addresses) and a WithHTTPClient client is used as it is. A
// refused connection answers ACCESS_DENIED naming config.url.
func WithEgressPolicy(p egress.Policy) Option {
	return func(s *settings) { s.egress = &p }
}

// WithTaskPollInterval sets how often task waits poll the task status
// (must be positive) for accounts whose config sets no taskPollMs. It is
// measured on the call's clock. Without it (and without taskPollMs) task
// waits poll as each task type's observed duration says (see taskPacer),
// and other waits every DefaultTaskPollInterval.
func WithTaskPollInterval(d time.Duration) Option {
	return func(s *settings) { s.timing.poll, s.timing.adaptive = d, false }
}

// WithTaskBatchWindow sets how long a task poll waits for the account's
// other task polls before their shared GET /nodes/{node}/tasks is sent
// (default DefaultTaskBatchWindow; sent at once with 100 polls). The
// account's concurrent creates share their GET /cluster/resources the same
// way, gathered for as long. 0 turns sharing off: every poll is the task's
// own GET …/tasks/{upid}/status, every create lists the cluster itself.
// Negative is INVALID_CONFIG.
func WithTaskBatchWindow(d time.Duration) Option {
	return func(s *settings) { s.taskBatchWindow = d }
}

// WithTaskTimeout sets how long one task wait may last on the call's clock
// (default DefaultTaskTimeout; must be positive) for accounts whose config
// sets no taskTimeoutMs.
func WithTaskTimeout(d time.Duration) Option {
	return func(s *settings) { s.timing.timeout = d }
}

// WithCallCounter reports the HTTP requests of every call to f (for
// metrics); f must be safe for concurrent use.
func WithCallCounter(f CallCounter) Option {
	return func(s *settings) { s.countCalls = f }
}

// taskTiming is how task waits poll: every poll, or, when adaptive (no
// poll interval was set: neither WithTaskPollInterval nor the account's
// taskPollMs), as the client's taskPacer says; for at most timeout. Other
// waits (a clone another call started) poll every poll.
type taskTiming struct {
	poll, timeout time.Duration
	adaptive      bool
}

// maxPolls bounds the polls of one wait whatever the clock does.
func (t taskTiming) maxPolls() int {
	if t.adaptive {
		return int(t.timeout/min(t.poll, firstTaskPoll)) + 2
	}
	return int(t.timeout/t.poll) + 2
}

// settings are the options of one Definition, shared by its clients.
type settings struct {
	snippets   SnippetWriter
	httpClient *http.Client
	// timing is the default of accounts that set no task timing.
	timing taskTiming
	// taskBatchWindow is WithTaskBatchWindow's (0: no shared task polls).
	taskBatchWindow time.Duration
	countCalls      CallCounter
	egress          *egress.Policy
	egressErr       error
}

// defaultMaxIdleConnsPerHost keeps enough connections to the cluster open
// for concurrent calls (net/http keeps 2), so calls rarely pay a TLS
// handshake.
const defaultMaxIdleConnsPerHost = 16

func newSettings(opts []Option) *settings {
	tr := egress.Policy{}.Transport(nil)
	tr.MaxIdleConnsPerHost = defaultMaxIdleConnsPerHost
	s := &settings{
		httpClient:      &http.Client{Timeout: DefaultHTTPTimeout, Transport: tr},
		timing:          taskTiming{poll: DefaultTaskPollInterval, timeout: DefaultTaskTimeout, adaptive: true},
		taskBatchWindow: DefaultTaskBatchWindow,
	}
	for _, o := range opts {
		o(s)
	}
	if s.egress != nil {
		if base, ok := s.httpClient.Transport.(*http.Transport); ok || s.httpClient.Transport == nil {
			c := *s.httpClient
			c.Transport = s.egress.Transport(base)
			s.httpClient = &c
		} else {
			s.egressErr = fmt.Errorf("WithEgressPolicy needs an *http.Transport, and the HTTP client's transport is %T", s.httpClient.Transport)
		}
	}
	return s
}

// validate reports the first unusable option: INVALID_CONFIG naming it.
func (s *settings) validate() error {
	switch {
	case s.timing.poll <= 0:
		return api.InvalidConfig("options.taskPollInterval", "the task poll interval must be positive")
	case s.timing.timeout <= 0:
		return api.InvalidConfig("options.taskTimeout", "the task timeout must be positive")
	case s.taskBatchWindow < 0:
		return api.InvalidConfig("options.taskBatchWindow", "the task batch window must not be negative (0 turns sharing off)")
	case s.egressErr != nil:
		return api.InvalidConfig("options.egressPolicy", "%v", s.egressErr)
	}
	return nil
}
