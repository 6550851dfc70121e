package reconciler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/clock"
)

// Options configures the reconciler. Zero values take the defaults.
type Options struct {
	// Logger receives one line per request and per reconcile outcome.
	Logger zerolog.Logger
	// Workers bounds concurrent API requests (default 64).
	Workers int
	// ReconcileWorkers bounds instances reconciled at once (default 64; a
	// reconcile mostly waits on the provider and the state store).
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
}

// ConsumerName is the durable work consumer shared by every replica.
const ConsumerName = "reconciler"

func (o *Options) defaults() {
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
	o      Options
	log    zerolog.Logger
	svc    *bus.Service
	cancel context.CancelFunc
	// slots bounds the work messages held (waiting or running, each with
	// a progress heartbeat); sem bounds the ones running.
	slots    chan struct{}
	sem      chan struct{}
	stopping chan struct{}
	// consumerTrouble is signalled by the work consumer's error handler.
	consumerTrouble chan struct{}
	wg              sync.WaitGroup
	budgets         *budgets
}

// Start serves the instance API on nc and starts consuming work. Stop it
// with Stop. Errors: the stores or the consumer could not be set up.
func Start(nc *nats.Conn, st *bus.Stores, o Options) (*Reconciler, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := newReconciler(nc, st, o)
	r.cancel, o = cancel, r.o
	svc, err := bus.StartService(nc, bus.ServiceConfig{
		Name: "reconciler", Version: "0.1.0", Description: "instance API and lifecycle",
		Workers: o.Workers, Logger: o.Logger, Endpoints: r.endpoints(),
	})
	if err != nil {
		cancel()
		return nil, err
	}
	r.svc = svc
	cc, err := r.startConsuming(ctx)
	if err != nil {
		r.Stop()
		return nil, err
	}
	r.wg.Add(1)
	go r.keepConsuming(ctx, cc)
	if o.ResyncInterval > 0 {
		r.wg.Add(1)
		go r.resyncLoop(ctx)
	}
	return r, nil
}

// newReconciler is a reconciler of o (defaults applied) that serves and
// consumes nothing yet.
func newReconciler(nc *nats.Conn, st *bus.Stores, o Options) *Reconciler {
	o.defaults()
	return &Reconciler{nc: nc, st: st, tables: tablesOf(st), o: o, log: o.Logger.With().Str("service", "reconciler").Logger(),
		cancel: func() {}, slots: make(chan struct{}, 2*o.ReconcileWorkers), sem: make(chan struct{}, o.ReconcileWorkers),
		stopping: make(chan struct{}), consumerTrouble: make(chan struct{}, 1), budgets: newBudgets(o.RateReserve, o.Clock)}
}

// Stop stops consuming, serving and resyncing. Work waiting for a worker
// is handed back at once (another replica takes it); running reconciles get
// CallTimeout to finish (so an operation being sent records its outcome)
// before they are cancelled, and Stop waits for them.
func (r *Reconciler) Stop() {
	if r.svc != nil {
		_ = r.svc.Stop()
	}
	select {
	case <-r.stopping:
	default:
		close(r.stopping)
	}
	drained := make(chan struct{})
	go func() { r.wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(r.o.CallTimeout):
	}
	r.cancel()
	<-drained
}

// startConsuming creates (or updates) the durable work consumer and starts
// consuming it. Errors: the consumer could not be set up.
func (r *Reconciler) startConsuming(ctx context.Context) (jetstream.ConsumeContext, error) {
	cons, err := r.st.JS.CreateOrUpdateConsumer(ctx, bus.StreamWork, jetstream.ConsumerConfig{
		Durable: ConsumerName, AckPolicy: jetstream.AckExplicitPolicy, AckWait: r.o.AckWait,
		MaxDeliver: -1, MaxAckPending: 10000, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("work consumer: %w", err)
	}
	// A small client-side buffer: messages waiting there get no heartbeat.
	cc, err := cons.Consume(r.dispatch(ctx), jetstream.PullMaxMessages(max(r.o.ReconcileWorkers/4, 2)),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			r.log.Warn().Err(err).Msg("work consumer error")
			select {
			case r.consumerTrouble <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("consume work: %w", err)
	}
	return cc, nil
}

// consumerSettle is how long a troubled work consumer must stay free of
// errors before it is started afresh.
const consumerSettle = 2 * time.Second

// keepConsuming stops cc when the replica stops, and starts consuming
// afresh (with backoff) whenever consuming ends on its own, or reported
// errors (a lost connection, missed heartbeats) and then settled for
// consumerSettle. nats.go ends a Consume for good on some errors, and after
// a whole NATS cluster restarted a Consume was seen to stay open and
// receive nothing, which leaves a replica serving the API but reconciling
// nothing; a fresh Consume (new pull requests, no stale client state)
// recovers from both.
func (r *Reconciler) keepConsuming(ctx context.Context, cc jetstream.ConsumeContext) {
	defer r.wg.Done()
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(250*time.Millisecond),
		backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0))
	for {
		if cc != nil {
			if !r.consumeUntilTrouble(cc) {
				return
			}
			cc.Stop()
		}
		select {
		case <-r.stopping:
			return
		case <-time.After(b.NextBackOff()):
		}
		var err error
		if cc, err = r.startConsuming(ctx); err != nil {
			r.log.Warn().Err(err).Msg("work consumer not restarted; retrying")
		} else {
			r.log.Info().Msg("work consumer started afresh")
			b.Reset()
		}
	}
}

// consumeUntilTrouble waits until cc ends on its own or its errors settle
// (true: start afresh), or the replica stops (false, cc stopped).
func (r *Reconciler) consumeUntilTrouble(cc jetstream.ConsumeContext) bool {
	var settled <-chan time.Time // nil until the consumer reports trouble
	for {
		select {
		case <-r.stopping:
			cc.Stop()
			return false
		case <-cc.Closed():
			r.log.Warn().Msg("work consumer ended")
			return true
		case <-r.consumerTrouble:
			settled = time.After(consumerSettle)
		case <-settled:
			return true
		}
	}
}

// dispatch takes a work message from the consumer: it holds a slot (the
// consumer waits while every slot is taken), sends progress heartbeats
// from then on, and reconciles when a worker is free.
func (r *Reconciler) dispatch(ctx context.Context) jetstream.MessageHandler {
	return func(msg jetstream.Msg) {
		select {
		case r.slots <- struct{}{}:
		case <-r.stopping:
			_ = msg.Nak()
			return
		}
		stopHeartbeat := heartbeat(msg, r.o.AckWait/3)
		r.wg.Add(1)
		go func() {
			defer func() { stopHeartbeat(); <-r.slots; r.wg.Done() }()
			select {
			case r.sem <- struct{}{}:
			case <-r.stopping:
				_ = msg.Nak() // stopping: another replica takes it now, not after AckWait
				return
			}
			defer func() { <-r.sem }()
			r.handle(ctx, msg)
		}()
	}
}
