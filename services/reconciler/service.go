package reconciler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/clock"
)

// Options configures the reconciler. Zero values take the defaults.
type Options struct {
	// Logger receives one line per request and per reconcile outcome.
	Logger zerolog.Logger
	// Quotas are the tenants' application quotas (usage.go; the list
	// quota of every verb "list"); default the stores' watch (st.Quotas).
	Quotas *bus.Quotas
	// Workers bounds concurrent API requests (default 64).
	Workers int
	// ReconcileWorkers bounds instances reconciled at once (default 64; a
	// reconcile mostly waits on the provider and the state store), granted
	// to tenants in turns (work.go).
	ReconcileWorkers int
	// PollInterval is how long to wait before the first look at a converging
	// machine (default 2 s); it doubles with each look (see pollDelay).
	PollInterval time.Duration
	// CallTimeout bounds one provider call (default 30 s).
	CallTimeout time.Duration
	// AckWait is how long a work message may go without an acknowledgement
	// or a progress heartbeat before another replica gets it (default 30 s):
	// how long the work a killed replica held waits. A running pass sends a
	// heartbeat every AckWait/3, so a pass may take longer than AckWait.
	AckWait time.Duration
	// ResyncInterval checks every instance (±20 % jitter) to catch lost
	// work and drift (default 10 min; negative disables). Each resync costs
	// one provider list page per account and per resyncPageSize machines,
	// and a pass for each instance found changed (see Resync).
	ResyncInterval time.Duration
	// GracefulOffTimeout is how long a machine may keep running after a
	// graceful-off (an ACPI shutdown) before it is powered off hard
	// (default 5 min).
	GracefulOffTimeout time.Duration
	// Retry is the backoff policy for retryable failures.
	Retry RetryPolicy
	// RateReserve is the share of a provider account's reported rate limit
	// left unused for the operator's other tools (default 0.1; negative: none).
	RateReserve float64
	// Clock is the time source of every record time, lease, retry and
	// rate-limit budget (default clock.Real). The loop's own waits
	// (JetStream redelivery, resync ticks) run on the wall clock.
	Clock clock.Clock
	// Bootstrap bounds the bootstrap sequence of host pools' instances
	// (bootstrap.go).
	Bootstrap BootstrapOptions
	// Hooks are test seams.
	Hooks Hooks
}

// Hooks lets tests act at precise points of a reconcile.
type Hooks struct {
	// BeforePass runs when a pass over the instance starts, before it
	// loads the record: a test holds there the passes it does not want
	// yet (they then act on the record as it is when released).
	BeforePass func(instanceID string)
	// AfterProviderCreate runs after the provider's create answered and
	// before its result is recorded.
	AfterProviderCreate func(instanceID string)
	// AfterAddressClaim runs after the instance's static address is
	// recorded and claimed and before the create is recorded and sent
	// (pools with network.addresses only).
	AfterAddressClaim func(instanceID string)
	// BootstrapStepRecorded runs after a bootstrap step was recorded and
	// before it is taken (state Running) or after its outcome was.
	BootstrapStepRecorded func(instanceID string, step api.BootstrapStep, state api.StepState)
}

func (o *Options) defaults() {
	o.Bootstrap.defaults()
	if o.ReconcileWorkers <= 0 {
		o.ReconcileWorkers = 64
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.ResyncInterval == 0 {
		o.ResyncInterval = 10 * time.Minute
	}
	if o.GracefulOffTimeout <= 0 {
		o.GracefulOffTimeout = 5 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	o.Retry.defaults()
	switch {
	case o.RateReserve == 0:
		o.RateReserve = 0.1
	case o.RateReserve < 0:
		o.RateReserve = 0
	}
}

// tables are the records the reconciler reads and writes: instances (and
// its instances-create idempotency records), the table it owns; pools and
// accounts, owned by the accounts service and only read here.
type tables struct {
	instances   *bus.Table[api.Instance]
	idempotency *bus.Table[idempotencyRecord]
	pools       bus.Reader[api.Pool]
	accounts    bus.Reader[api.Account]
}

func tablesOf(st *bus.Stores) tables {
	return tables{instances: st.InstanceTable(), idempotency: bus.NewTable[idempotencyRecord](st.Idempotency, "idempotency record"),
		pools: st.PoolTable().Reader(), accounts: st.AccountTable().Reader()}
}

// Reconciler is a running instance API and reconcile loop.
type Reconciler struct {
	nc *nats.Conn
	st *bus.Stores
	tables
	o   Options
	log zerolog.Logger
	svc *bus.Service
	// passes is the context of every pass; cancel ends it (Stop, after
	// the drain allowance).
	passes context.Context
	cancel context.CancelFunc
	// stopping ends when Stop is called (stop): pullers, waits and the
	// resync loop end, running passes get the drain allowance.
	stopping context.Context
	stop     context.CancelFunc
	// queue holds the fetched work no worker has started, handed out
	// fairly across tenants (work.go).
	queue *fairQueue
	// workMu guards pulled: the tenants whose work this replica pulls
	// (nil: it consumes no work).
	workMu  sync.Mutex
	pulled  map[workSource]bool
	wg      sync.WaitGroup
	budgets *budgets
	// index answers instances.list (list.go); nil until Start.
	index *bus.Index[api.Instance]
	// usage keeps the tenants' instance counts and create rates (usage.go).
	usage *usage
	// poolCache holds the pools creates read (poolcache.go).
	poolCache poolCache
}

// Start serves the instance API on nc and starts consuming work. Stop it
// with Stop. Errors: the stores or the consumer could not be set up.
func Start(nc *nats.Conn, st *bus.Stores, o Options) (*Reconciler, error) {
	if o.Quotas == nil {
		q, err := st.Quotas(o.Logger)
		if err != nil {
			return nil, fmt.Errorf("reconciler: %w", err)
		}
		o.Quotas = q
	}
	r := newReconciler(nc, st, o)
	o = r.o
	r.pulled = map[workSource]bool{}
	index, err := instanceIndex(r.instances, o)
	if err != nil {
		r.cancel()
		return nil, err
	}
	r.index = index
	svc, err := bus.StartService(nc, bus.ServiceConfig{
		Name: "reconciler", Version: "0.1.0", Description: "instance API and lifecycle",
		Workers: o.Workers, Logger: o.Logger, Endpoints: r.endpoints(), Quotas: o.Quotas,
	})
	if err != nil {
		r.cancel()
		index.Stop()
		return nil, err
	}
	r.svc = svc
	ctx, cancel := context.WithTimeout(r.stopping, startWorkTimeout)
	defer cancel()
	for range o.ReconcileWorkers {
		r.wg.Add(1)
		go r.work()
	}
	if err := r.startWork(ctx); err != nil {
		r.Stop()
		return nil, err
	}
	if o.ResyncInterval > 0 {
		r.wg.Add(1)
		go r.resyncLoop(r.passes)
	}
	if st.WorkFlushedAsync() {
		r.wg.Add(1)
		go r.queueUnsettledOnReconnect(r.passes)
	}
	return r, nil
}

// newReconciler is a reconciler of o (defaults applied) that serves and
// consumes nothing yet.
func newReconciler(nc *nats.Conn, st *bus.Stores, o Options) *Reconciler {
	o.defaults()
	r := &Reconciler{nc: nc, st: st, tables: tablesOf(st), o: o, log: o.Logger.With().Str("service", "reconciler").Logger(),
		queue: newFairQueue(), budgets: newBudgets(o.RateReserve, o.Clock), usage: newUsage(st)}
	r.passes, r.cancel = context.WithCancel(context.Background())
	r.stopping, r.stop = context.WithCancel(context.Background())
	return r
}

// Stop stops consuming, serving and resyncing. Work waiting for a worker
// is handed back at once (another replica takes it); running reconciles get
// CallTimeout to finish (so an operation being sent records its outcome)
// before they are cancelled, and Stop waits for them.
func (r *Reconciler) Stop() {
	if r.svc != nil {
		_ = r.svc.Stop()
	}
	r.stop()
	r.queue.close()
	drained := make(chan struct{})
	go func() { r.wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(r.o.CallTimeout):
	}
	r.cancel()
	<-drained
	if r.index != nil {
		r.index.Stop()
	}
}
