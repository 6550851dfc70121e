package emulator

import (
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	"better-compute.io/compute/pkg/clock"
)

// Emulator is the in-memory PVE cluster and its HTTP API. It is safe for
// concurrent use; every API call and Go method holds one mutex while it
// touches state.
type Emulator struct {
	opts  Options // defaults filled; the state Reset returns to
	clock clock.Clock
	mux   *http.ServeMux
	boot  time.Time
	calls callCounter

	mu          sync.Mutex
	legacy      bool
	tokens      map[string]string
	durations   map[string]time.Duration
	nodes       map[string]*Node
	nodeOrder   []string
	storages    []storageDef
	vms         map[int]*vm
	tasks       map[string]*task
	running     []*task
	pidSeq      uint32
	macSeq      uint32
	routeFaults []*RouteFault
	taskFaults  map[string][]string
	latency     map[string]Latency
	// statsInterval, rrd and rrdAt are pvestatd's refresh interval, the
	// RRD cache it last wrote and when (see rrd.go).
	statsInterval time.Duration
	rrd           map[int]rrdEntry
	rrdAt         time.Time
	release       chan struct{} // closed to release hung calls
}

// New returns an Emulator in the state opts describes. Invalid options
// (duplicate node names or template VMIDs, a template on an unknown node)
// panic: they are programming errors.
func New(opts Options) *Emulator {
	o := opts.withDefaults()
	e := &Emulator{opts: o, clock: o.Clock, boot: o.Clock.Now()}
	e.calls.counts = map[string]int{}
	e.mux = http.NewServeMux()
	e.registerAPI()
	e.registerControl()
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.resetLocked(); err != nil {
		panic(err)
	}
	return e
}

// ServeHTTP serves the API under /api2/json and the control API under
// /_emulator/.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mux.ServeHTTP(w, r)
}

// Reset returns the emulator to the state its Options describe: nodes,
// templates, durations, error style, stats interval (with a fresh RRD
// cache); no other VMs, tasks, faults or call counts.
func (e *Emulator) Reset() {
	e.calls.reset()
	e.mu.Lock()
	defer e.mu.Unlock()
	// The templates were valid in New, so this cannot fail.
	_ = e.resetLocked()
}

// resetLocked rebuilds all state from e.opts. e.mu must be held.
func (e *Emulator) resetLocked() error {
	e.legacy = e.opts.LegacyErrors
	e.tokens = e.opts.Tokens
	e.durations = maps.Clone(e.opts.TaskDurations)
	e.nodes = map[string]*Node{}
	e.nodeOrder = e.nodeOrder[:0]
	for _, n := range e.opts.Nodes {
		if !dnsNamePattern.MatchString(n.Name) || e.nodes[n.Name] != nil {
			return fmt.Errorf("emulator: bad or duplicate node name %q", n.Name)
		}
		e.nodes[n.Name] = &n
		e.nodeOrder = append(e.nodeOrder, n.Name)
	}
	e.storages = storageDefs(e.opts.Storages)
	for _, v := range e.vms {
		e.stopSSH(v)
	}
	e.vms = map[int]*vm{}
	e.tasks = map[string]*task{}
	e.running = nil
	e.macSeq = 0
	e.clearFaultsLocked()
	for _, t := range e.opts.Templates {
		if err := e.addTemplateLocked(t); err != nil {
			return fmt.Errorf("emulator: template %d: %w", t.VMID, err)
		}
	}
	e.statsInterval, e.rrd = e.opts.StatsInterval, nil
	e.refreshStatsLocked(e.clock.Now()) // a running cluster has reported its templates
	return nil
}

// SetLegacyErrors switches between PVE 8.3+ (false) and older (true) error
// replies and version.
func (e *Emulator) SetLegacyErrors(legacy bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.legacy = legacy
}

// SetTaskDuration sets how long tasks of taskType run on the clock.
func (e *Emulator) SetTaskDuration(taskType string, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.durations[taskType] = d
}
