package poolctl

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// ServiceName is the name `compute serve` takes for the controller.
const ServiceName = "poolctl"

// Defaults of Options.
const (
	DefaultLeaseDuration   = 15 * time.Second
	DefaultCallTimeout     = 10 * time.Second
	DefaultRecheckInterval = 2 * time.Second
	DefaultResyncInterval  = 30 * time.Second
	DefaultWorkers         = 4
)

// Options configures Start.
type Options struct {
	// Logger receives a line per action (create, delete) and per failed pass.
	Logger zerolog.Logger
	// ID names this controller in the leases it holds (default a new id).
	ID string
	// LeaseDuration is how long a taken or renewed lease lasts (default
	// 15 s); a pass stops acting LeaseDuration/5 before it ends.
	LeaseDuration time.Duration
	// CallTimeout bounds one instance API call (default 10 s; at most
	// LeaseDuration − LeaseDuration/5).
	CallTimeout time.Duration
	// RecheckInterval is how soon a pool that has not converged is looked
	// at again without an event (default 2 s).
	RecheckInterval time.Duration
	// ResyncInterval is how often every sized pool is looked at (default
	// 30 s; negative disables).
	ResyncInterval time.Duration
	// Workers bounds the pools acted on at once (default 4).
	Workers int
	// Hooks are test seams.
	Hooks Hooks
}

// Hooks lets tests act at precise points of a pass.
type Hooks struct {
	// BeforeCreate runs before the create of a slot is sent (after the slot
	// was written).
	BeforeCreate func(poolID string, ordinal int64)
}

func (o *Options) defaults() {
	if o.ID == "" {
		o.ID = api.NewID("poolctl_")
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	o.CallTimeout = min(o.CallTimeout, o.LeaseDuration-o.LeaseDuration/5)
	if o.RecheckInterval <= 0 {
		o.RecheckInterval = DefaultRecheckInterval
	}
	if o.ResyncInterval == 0 {
		o.ResyncInterval = DefaultResyncInterval
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
}

// Controller is a running pool controller.
type Controller struct {
	nc      *nats.Conn
	o       Options
	log     zerolog.Logger
	pools   bus.Reader[api.Pool]
	control *bus.Table[api.PoolControl]
	st      *bus.Stores

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	dirty    map[string]bool // pool keys (<tenant>.<poolId>) waiting for a pass
	running  map[string]bool // pool keys a pass runs on
	queue    chan string
	timers   map[string]*time.Timer
	members  map[string]string // instance id → pool key, of the slots last seen
	actions  atomic.Int64
	stopOnce sync.Once
	svc      *bus.Service
}

// serviceVersion is the micro service version.
const serviceVersion = "0.1.0"

// Start runs the pool controller on nc with the stores st: it watches
// compute_pools and the instance events, and acts on sized pools through
// the instance API. Start fails only when the watch or the subscription
// cannot be set up.
func Start(nc *nats.Conn, st *bus.Stores, o Options) (*Controller, error) {
	if nc == nil || st == nil {
		return nil, errors.New("poolctl: a NATS connection and the stores are required")
	}
	o.defaults()
	c := &Controller{nc: nc, o: o, log: o.Logger.With().Str("service", ServiceName).Logger(),
		pools: st.PoolTable().Reader(), control: st.PoolControlTable(), st: st,
		dirty: map[string]bool{}, running: map[string]bool{}, queue: make(chan string, 1024),
		timers: map[string]*time.Timer{}, members: map[string]string{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	w, err := st.Pools.WatchAll(c.ctx, jetstream.MetaOnly())
	if err != nil {
		c.cancel()
		return nil, err
	}
	sub, err := nc.Subscribe(bus.PublicRoot+".*.events."+bus.ResourceInstances+".>", c.onEvent)
	if err != nil {
		_ = w.Stop()
		c.cancel()
		return nil, err
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { _ = sub.Unsubscribe(); _ = w.Stop() }()
		c.watchPools(w)
	}()
	for range o.Workers {
		c.wg.Add(1)
		go c.worker()
	}
	if o.ResyncInterval > 0 {
		c.wg.Add(1)
		go c.resync()
	}
	// A micro service without endpoints: `nats micro ls` and `compute health
	// --service poolctl` see the controller.
	svc, err := bus.StartService(nc, bus.ServiceConfig{Name: ServiceName, Version: serviceVersion,
		Description: "pool controller: keeps sized pools at their size, rolls out their revisions", Logger: o.Logger})
	if err != nil {
		c.Stop()
		return nil, err
	}
	c.svc = svc
	c.log.Info().Str("controller", o.ID).Msg("pool controller started")
	return c, nil
}

// Stop ends the controller's passes and waits for them; the leases it holds
// simply expire.
func (c *Controller) Stop() {
	c.stopOnce.Do(func() {
		if c.svc != nil {
			_ = c.svc.Stop()
		}
		c.cancel()
		c.mu.Lock()
		for _, t := range c.timers {
			t.Stop()
		}
		c.mu.Unlock()
		c.wg.Wait()
	})
}

// Actions counts the creates and deletes this controller sent.
func (c *Controller) Actions() int64 { return c.actions.Load() }

// watchPools kicks the pool of every key that changes in compute_pools
// (every existing one first).
func (c *Controller) watchPools(w jetstream.KeyWatcher) {
	for {
		select {
		case <-c.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil && !strings.HasPrefix(e.Key(), bus.InternalTenantPrefix) {
				c.kick(e.Key())
			}
		}
	}
}

// onEvent kicks the pool of an instance the controller made when an event
// of it arrives: compute.v1.<tenant>.events.instances.<id>.<type>.
func (c *Controller) onEvent(m *nats.Msg) {
	tok := strings.Split(m.Subject, ".")
	if len(tok) != 7 || tok[4] != bus.ResourceInstances {
		return
	}
	c.mu.Lock()
	key, ok := c.members[tok[5]]
	c.mu.Unlock()
	if ok {
		c.kick(key)
	}
}

// resync kicks every sized pool every ResyncInterval.
func (c *Controller) resync() {
	defer c.wg.Done()
	t := time.NewTicker(c.o.ResyncInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			err := c.pools.Each(c.ctx, "", func(tenant, id string, p api.Pool, _ uint64) error {
				if p.Sizes != nil {
					c.kick(bus.RecordKey(tenant, id))
				}
				return nil
			})
			if err != nil && c.ctx.Err() == nil {
				c.log.Warn().Err(err).Msg("resync: pools not listed")
			}
		}
	}
}

// kick queues a pass over pool key (once, however often it is kicked
// before the pass starts; again after it if kicked while it runs).
func (c *Controller) kick(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil || c.dirty[key] {
		return
	}
	c.dirty[key] = true
	if c.running[key] {
		return // the pass's end queues it
	}
	select {
	case c.queue <- key:
	default: // full: the resync, or the next kick, brings it
		delete(c.dirty, key)
	}
}

// kickAfter kicks key after d (one timer per pool: a sooner one wins).
func (c *Controller) kickAfter(key string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	if t, ok := c.timers[key]; ok {
		t.Stop()
	}
	c.timers[key] = time.AfterFunc(d, func() { c.kick(key) })
}

// worker runs passes off the queue, one pool at a time.
func (c *Controller) worker() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case key := <-c.queue:
			c.mu.Lock()
			delete(c.dirty, key)
			c.running[key] = true
			c.mu.Unlock()
			again := c.runPass(key)
			c.mu.Lock()
			delete(c.running, key)
			requeue := c.dirty[key]
			c.mu.Unlock()
			if requeue {
				c.mu.Lock()
				delete(c.dirty, key)
				c.mu.Unlock()
				c.kick(key)
			} else if again > 0 {
				c.kickAfter(key, again)
			}
		}
	}
}

// runPass runs one pass over pool key and says when to look again (0:
// at the next event, change or resync).
func (c *Controller) runPass(key string) time.Duration {
	tenant, id, ok := bus.SplitKey(key)
	if !ok || !api.ValidTenant(tenant) || !api.ValidID(api.PrefixPool, id) {
		return 0
	}
	again, err := c.pass(c.ctx, tenant, id)
	if err != nil && c.ctx.Err() == nil {
		c.log.Warn().Str("tenant", tenant).Str("pool", id).Err(err).Msg("pool pass failed")
		return max(again, c.o.RecheckInterval)
	}
	return again
}
