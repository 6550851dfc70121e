package emulator

import (
	"sync"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/sshemu"
)

// DefaultActionDuration is how long an action runs when
// Options.ActionDuration is zero.
const DefaultActionDuration = time.Second

// Options configures an Emulator. The zero value is usable.
type Options struct {
	// Tokens are the accepted API tokens. Empty accepts any non-empty
	// bearer token.
	Tokens []string
	// RateLimitSize is the token bucket size (RateLimit-Limit); zero means
	// DefaultRateLimitSize.
	RateLimitSize int
	// RateLimitRefillPerSecond is the refill rate; zero means
	// DefaultRateLimitRefillPerSecond.
	RateLimitRefillPerSecond float64
	// ActionDuration is how long every action runs before it completes;
	// zero means DefaultActionDuration.
	ActionDuration time.Duration
	// Clock measures actions and the rate limit; nil means the wall clock.
	// Injected latency is always real time.
	Clock clock.Clock
	// Logger receives one debug line per API call; the zero value logs
	// nothing.
	Logger zerolog.Logger
	// ListLag is how long a new server stays out of GET /servers lists
	// (GET /servers/{id} shows it at once); zero lists it at once.
	//
	// Guess: the real API's lists may be served from an index that lags
	// the truth by moments; this models that for the clients' guarantee
	// that a lagging list never makes a fresh server look missing.
	ListLag time.Duration
	// ServerLimit is the project's server quota: a POST /servers beyond it
	// answers 403 resource_limit_exceeded; zero means no limit. See also
	// SetServerLimit.
	ServerLimit int
	// SSH, when set, gives every server created through the API an SSH
	// endpoint on loopback for as long as it exists (fleet key: the server
	// id; seeded servers get none), reported in the
	// emulator-only label api.EmulatorSSHPortKey; a rebuild changes its
	// host key. Nil: no SSH endpoints.
	SSH *sshemu.Fleet
}

// Emulator is an in-memory Hetzner Cloud project served over HTTP. It is
// safe for concurrent use.
type Emulator struct {
	clock          clock.Clock
	log            zerolog.Logger
	actionDuration time.Duration
	listLag        time.Duration
	tokens         map[string]bool

	ssh     *sshemu.Fleet
	limiter *bucket
	faults  *faults
	calls   *counters

	mu sync.Mutex
	st *state
}

// state is the project's resources; guarded by Emulator.mu.
type state struct {
	locations []*location
	types     []*serverType
	images    []*image

	servers map[int64]*server
	order   []*server // by ascending id
	names   map[string]*server

	actions map[int64]*action
	pending actionQueue

	serverLimit int // 0: no quota (see Options.ServerLimit)

	net netState // networks, firewalls, placement groups (netres.go)

	serverSeq    int64 // servers ever created, for addresses
	nextServerID int64
	nextActionID int64

	selectors map[string]api.Selector // parse cache
}

// First ids handed out; arbitrary, but as large as real ids tend to be.
const (
	firstServerID = 50_000_001
	firstActionID = 900_000_001
)

// newState returns an empty project over a fresh catalogue.
func newState() *state {
	locs := newLocations()
	return &state{
		locations:    locs,
		types:        newServerTypes(locs),
		images:       newImages(),
		servers:      map[int64]*server{},
		names:        map[string]*server{},
		actions:      map[int64]*action{},
		nextServerID: firstServerID,
		nextActionID: firstActionID,
		selectors:    map[string]api.Selector{},
		net:          newNetState(),
	}
}

// New returns an emulator with today's catalogue, no servers, a full rate
// limit budget and no faults.
func New(opts Options) *Emulator {
	e := &Emulator{
		clock:          opts.Clock,
		log:            opts.Logger,
		actionDuration: opts.ActionDuration,
		listLag:        opts.ListLag,
		tokens:         map[string]bool{},
		faults:         newFaults(),
		calls:          newCounters(),
		st:             newState(),
		ssh:            opts.SSH,
	}
	if e.clock == nil {
		e.clock = clock.Real{}
	}
	if e.actionDuration <= 0 {
		e.actionDuration = DefaultActionDuration
	}
	for _, t := range opts.Tokens {
		e.tokens[t] = true
	}
	e.st.serverLimit = opts.ServerLimit
	e.limiter = newBucket(opts.RateLimitSize, opts.RateLimitRefillPerSecond, e.clock.Now())
	return e
}

// Reset returns the emulator to its state after New: today's catalogue, no
// servers or actions, no faults, zero call counts and a full rate limit.
func (e *Emulator) Reset() {
	e.mu.Lock()
	e.st = newState()
	e.mu.Unlock()

	e.faults.clear()
	e.ResetCalls()
	e.limiter.set(int(e.limiter.size), time.Time{}, e.clock.Now())
}

// SetRateLimit puts the rate limit bucket at remaining requests and closes
// a window until resetAt (RateLimit-Reset): until then the bucket does not
// refill (every request past remaining answers 429 rate_limit_exceeded),
// at resetAt it is full, and afterwards it refills at the configured rate
// again. A resetAt not after now leaves no window: the bucket refills at
// the configured rate from remaining. Use it to replay "budget empty, reset
// in 20 s" (see bucket.set for why this is a window).
func (e *Emulator) SetRateLimit(remaining int, resetAt time.Time) {
	e.limiter.set(remaining, resetAt, e.clock.Now())
}
