package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Work scheduling, fair across tenants and, within a tenant, across its
// provider accounts. Work of an instance is queued under its pool's account
// (bus.AccountWork, compute.work.<tenant>.<account>.<instance>), and every
// tenant's account has a durable consumer of its own on the work stream
// (WorkConsumer, filter compute.work.<tenant>.<account>.*); work queued
// before that (bus.Work, compute.work.<tenant>.<instance>) keeps the
// tenant's consumer of that shape. Each replica pulls every consumer into
// a fair queue (fairqueue.go), at most tenantBuffer messages of one
// consumer waiting at a time, and ReconcileWorkers workers take messages
// from it one tenant at a time in turn, a tenant's turns going to its
// accounts in turn: behind one tenant's flood of 5,000 passes another
// tenant's pass waits for about one pass to end, not for the flood, and
// so does the tenant's own pass on another account. A message is acknowledged only when its pass ends (reconcile.go);
// a replica that dies leaves it to redelivery after AckWait. Every message
// a replica holds (running, or waiting in the queue) sends progress
// heartbeats; a stopping replica hands the waiting ones back at once.

// workConsumerPrefix prefixes the durable work consumer of every tenant.
const workConsumerPrefix = "reconciler-"

// WorkConsumer is the durable consumer of the work of one tenant's
// provider account on the work stream (COMPUTE_WORK, filter
// compute.work.<tenant>.<account>.*), shared by every replica:
// reconciler-<tenant>_<account>; with account "", the tenant's consumer of
// the work queued without an account (compute.work.<tenant>.*):
// reconciler-<tenant>. A tenant id holds no "_", so the name splits at its
// first one.
func WorkConsumer(tenant, account string) string {
	if account == "" {
		return workConsumerPrefix + tenant
	}
	return workConsumerPrefix + tenant + "_" + account
}

// workSource is what one work consumer holds: a tenant's account's work
// (account "" for the work queued without one).
type workSource struct{ tenant, account string }

func (w workSource) consumer() string { return WorkConsumer(w.tenant, w.account) }

func (w workSource) filter() string {
	if w.account == "" {
		return bus.Work(w.tenant, "*")
	}
	return bus.AccountWork(w.tenant, w.account, "*")
}

// parseWorkConsumer is the source of a WorkConsumer name.
func parseWorkConsumer(name string) (workSource, bool) {
	rest, ok := strings.CutPrefix(name, workConsumerPrefix)
	if !ok {
		return workSource{}, false
	}
	tenant, account, _ := strings.Cut(rest, "_")
	return workSource{tenant, account}, api.ValidTenant(tenant) && (account == "" || api.ValidID(api.PrefixAccount, account))
}

// legacyConsumer is the one durable consumer of every tenant's work that
// reconcilers used before WorkConsumer. A work-queue stream refuses a
// filtered consumer beside it, so a replica deletes it at start-up; the
// messages it held unacknowledged stay in the stream, and the tenants'
// consumers deliver them.
const legacyConsumer = "reconciler"

// JetStream's refusals of a consumer whose filter overlaps another's on a
// work-queue stream (nats-server's JSConsumerWQMultipleUnfilteredErr and
// JSConsumerWQConsumerNotUniqueErr; nats.go has no constant for them).
const (
	errWQMultipleUnfiltered jetstream.ErrorCode = 10099
	errWQConsumerNotUnique  jetstream.ErrorCode = 10100
)

// pullWait bounds one fetch of a tenant's consumer (a long poll; nothing
// is lost when it ends empty).
const pullWait = 30 * time.Second

// discoverInterval is how often a replica looks for tenants' consumers
// created by other replicas.
const discoverInterval = 10 * time.Second

// startWork deletes the legacy consumer, pulls the work of every tenant
// that has a consumer or pending work (messages queued before an upgrade
// included), and keeps looking for new tenants' consumers. Errors: the
// work stream or its consumers could not be listed or set up.
func (r *Reconciler) startWork(ctx context.Context) error {
	stream, err := r.st.JS.Stream(ctx, bus.StreamWork)
	if err != nil {
		return fmt.Errorf("work stream: %w", err)
	}
	if err := stream.DeleteConsumer(ctx, legacyConsumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("work consumer %s: %w", legacyConsumer, err)
	}
	sources, err := workSources(ctx, stream, true)
	if err != nil {
		return err
	}
	for _, src := range sources {
		if err := r.serveWork(ctx, src); err != nil {
			return err
		}
	}
	r.wg.Add(1)
	go r.discoverTenants(stream)
	return nil
}

// workSources lists the sources that have a work consumer, and with
// pending also those with a message in stream.
func workSources(ctx context.Context, stream jetstream.Stream, pending bool) ([]workSource, error) {
	seen := map[workSource]bool{}
	names := stream.ConsumerNames(ctx)
	for name := range names.Name() {
		if src, ok := parseWorkConsumer(name); ok {
			seen[src] = true
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("work consumers: %w", err)
	}
	if pending {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(bus.WorkRoot+".>"))
		if err != nil {
			return nil, fmt.Errorf("work stream subjects: %w", err)
		}
		for subject := range info.State.Subjects {
			if t, account, _, ok := parseWorkSubject(subject); ok {
				seen[workSource{t, account}] = true
			}
		}
	}
	sources := make([]workSource, 0, len(seen))
	for src := range seen {
		sources = append(sources, src)
	}
	return sources, nil
}

// discoverTenants pulls, every discoverInterval, the work of the tenants
// whose consumer another replica created, until the replica stops.
func (r *Reconciler) discoverTenants(stream jetstream.Stream) {
	defer r.wg.Done()
	for {
		select {
		case <-r.stopping.Done():
			return
		case <-time.After(discoverInterval):
		}
		ctx, cancel := context.WithTimeout(r.stopping, streamCallTimeout)
		sources, err := workSources(ctx, stream, false)
		for _, src := range sources {
			if err == nil {
				err = r.serveWork(ctx, src)
			}
		}
		cancel()
		if err != nil && r.stopping.Err() == nil {
			r.log.Warn().Err(err).Msg("tenants' work consumers not listed; retrying")
		}
	}
}

// streamCallTimeout bounds one JetStream request of the work scheduling.
const streamCallTimeout = 10 * time.Second

// startWorkTimeout bounds startWork: a consumer set up for every tenant
// with work.
const startWorkTimeout = time.Minute

// serveWork makes sure the source's consumer exists and this replica
// pulls it; once per source and replica, and not at all for a reconciler
// that consumes no work (startAPIOnly). Errors: the consumer could not be
// set up within ctx.
func (r *Reconciler) serveWork(ctx context.Context, src workSource) error {
	r.workMu.Lock()
	defer r.workMu.Unlock()
	if r.pulled == nil || r.pulled[src] {
		return nil
	}
	cons, err := r.ensureConsumer(ctx, src)
	if err != nil {
		return err
	}
	r.pulled[src] = true
	r.wg.Add(1)
	go r.pull(src, cons)
	return nil
}

// ensureConsumer creates (or updates) the source's work consumer. When the
// stream refuses it beside the legacy consumer (a replica of an older
// version recreated it), the legacy consumer is deleted and the create
// tried again.
func (r *Reconciler) ensureConsumer(ctx context.Context, src workSource) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable: src.consumer(), FilterSubject: src.filter(), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: r.o.AckWait, MaxDeliver: -1, MaxAckPending: 10000, DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	cons, err := r.st.JS.CreateOrUpdateConsumer(ctx, bus.StreamWork, cfg)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == errWQMultipleUnfiltered || apiErr.ErrorCode == errWQConsumerNotUnique) {
		if derr := r.st.JS.DeleteConsumer(ctx, bus.StreamWork, legacyConsumer); derr != nil && !errors.Is(derr, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("work consumer %s: %w", legacyConsumer, derr)
		}
		cons, err = r.st.JS.CreateOrUpdateConsumer(ctx, bus.StreamWork, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("work consumer %s: %w", cfg.Durable, err)
	}
	return cons, nil
}

// pull fetches the source's work until the replica stops, into the fair
// queue, holding at most tenantBuffer of its messages there at once: it fetches as many as there is room for in one request (a long
// poll of pullWait), and each message's heartbeats start when it arrives.
// A failed fetch (a lost connection, a consumer deleted or lost with a
// cluster's store) sets the consumer up afresh, with backoff.
func (r *Reconciler) pull(src workSource, cons jetstream.Consumer) {
	defer r.wg.Done()
	log := r.log.With().Str("tenant", src.tenant).Str("account", src.account).Logger()
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(250*time.Millisecond),
		backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0))
	room := make(chan struct{}, r.tenantBuffer())
	for range cap(room) {
		room <- struct{}{}
	}
	for r.stopping.Err() == nil {
		if cons == nil {
			ctx, cancel := context.WithTimeout(r.stopping, streamCallTimeout)
			var err error
			cons, err = r.ensureConsumer(ctx, src)
			cancel()
			if err != nil {
				log.Warn().Err(err).Msg("work consumer not set up; retrying")
				r.pause(b.NextBackOff())
				continue
			}
		}
		n := r.takeRoom(room)
		if n == 0 {
			return // stopping
		}
		got, err := r.fetch(cons, src, n, room)
		for range n - got {
			room <- struct{}{}
		}
		switch {
		case r.stopping.Err() != nil:
			return
		case err != nil:
			log.Warn().Err(err).Msg("work fetch failed; setting the consumer up afresh")
			cons = nil
			r.pause(b.NextBackOff())
		default:
			b.Reset()
		}
	}
}

// tenantBuffer is how many fetched messages of one consumer may wait in the
// fair queue: enough that a busy account keeps every worker fed between two
// fetches, few enough that a waiting message never outlives its
// heartbeats' purpose.
func (r *Reconciler) tenantBuffer() int { return max(r.o.ReconcileWorkers/4, 2) }

// takeRoom waits for room for one message and takes all there is; 0 when
// the replica stops first.
func (r *Reconciler) takeRoom(room chan struct{}) int {
	select {
	case <-room:
	case <-r.stopping.Done():
		return 0
	}
	n := 1
	for {
		select {
		case <-room:
			n++
		default:
			return n
		}
	}
}

// fetch asks cons for up to n messages, waiting up to pullWait (or until
// the replica stops), and pushes each into the fair queue as it arrives,
// its room given back when the message is done. It returns how many came;
// an error only when the fetch failed (not when it ended with fewer).
func (r *Reconciler) fetch(cons jetstream.Consumer, src workSource, n int, room chan struct{}) (int, error) {
	ctx, cancel := context.WithTimeout(r.stopping, pullWait)
	defer cancel()
	batch, err := cons.Fetch(n, jetstream.FetchContext(ctx))
	if err != nil {
		return 0, err
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		r.queue.push(src.tenant, src.account, held{msg: msg, stopHeartbeat: heartbeat(msg, r.o.AckWait/3),
			release: func() { room <- struct{}{} }})
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		return got, err
	}
	return got, nil
}

// work runs passes, one message at a time, from the fair queue until the
// replica stops; ReconcileWorkers of them run.
func (r *Reconciler) work() {
	defer r.wg.Done()
	for {
		m, ok := r.queue.next(r.stopping)
		if !ok {
			return
		}
		r.handle(r.passes, m.msg)
		m.stopHeartbeat()
	}
}

// pause waits d, or less when the replica stops.
func (r *Reconciler) pause(d time.Duration) {
	select {
	case <-r.stopping.Done():
	case <-time.After(d):
	}
}
