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

	"better-compute.io/compute/pkg/bus"
)

// Work scheduling, fair across tenants. Every tenant's work has a durable
// consumer of its own on the work stream (WorkConsumer, filter
// compute.work.<tenant>.*). Each replica pulls every tenant's consumer into
// a fair queue (fairqueue.go), at most tenantBuffer messages of one tenant
// waiting at a time, and ReconcileWorkers workers take messages from it one
// tenant at a time in turn: behind one tenant's flood of 5,000 passes
// another tenant's pass waits for about one pass to end, not for the
// flood. A message is acknowledged only when its pass ends (reconcile.go);
// a replica that dies leaves it to redelivery after AckWait. Every message
// a replica holds (running, or waiting in the queue) sends progress
// heartbeats; a stopping replica hands the waiting ones back at once.

// workConsumerPrefix prefixes the durable work consumer of every tenant.
const workConsumerPrefix = "reconciler-"

// WorkConsumer is the durable consumer of one tenant's work on the work
// stream (COMPUTE_WORK, filter compute.work.<tenant>.*), shared by every
// replica: reconciler-<tenant>.
func WorkConsumer(tenant string) string { return workConsumerPrefix + tenant }

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
	tenants, err := workTenants(ctx, stream, true)
	if err != nil {
		return err
	}
	for _, t := range tenants {
		if err := r.serveTenant(ctx, t); err != nil {
			return err
		}
	}
	r.wg.Add(1)
	go r.discoverTenants(stream)
	return nil
}

// workTenants lists the tenants that have a work consumer, and with
// pending also those with a message in stream.
func workTenants(ctx context.Context, stream jetstream.Stream, pending bool) ([]string, error) {
	seen := map[string]bool{}
	names := stream.ConsumerNames(ctx)
	for name := range names.Name() {
		if t, ok := strings.CutPrefix(name, workConsumerPrefix); ok {
			seen[t] = true
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
			if t, _, ok := parseWorkSubject(subject); ok {
				seen[t] = true
			}
		}
	}
	tenants := make([]string, 0, len(seen))
	for t := range seen {
		tenants = append(tenants, t)
	}
	return tenants, nil
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
		tenants, err := workTenants(ctx, stream, false)
		for _, t := range tenants {
			if err == nil {
				err = r.serveTenant(ctx, t)
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

// serveTenant makes sure the tenant's consumer exists and this replica
// pulls it; once per tenant and replica, and not at all for a reconciler
// that consumes no work (startAPIOnly). Errors: the consumer could not be
// set up within ctx.
func (r *Reconciler) serveTenant(ctx context.Context, tenant string) error {
	r.workMu.Lock()
	defer r.workMu.Unlock()
	if r.pulled == nil || r.pulled[tenant] {
		return nil
	}
	cons, err := r.ensureConsumer(ctx, tenant)
	if err != nil {
		return err
	}
	r.pulled[tenant] = true
	r.wg.Add(1)
	go r.pull(tenant, cons)
	return nil
}

// ensureConsumer creates (or updates) the tenant's work consumer. When the
// stream refuses it beside the legacy consumer (a replica of an older
// version recreated it), the legacy consumer is deleted and the create
// tried again.
func (r *Reconciler) ensureConsumer(ctx context.Context, tenant string) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable: WorkConsumer(tenant), FilterSubject: bus.Work(tenant, "*"), AckPolicy: jetstream.AckExplicitPolicy,
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

// pull fetches the tenant's work until the replica stops, into the fair
// queue, holding at most tenantBuffer of the tenant's messages there at
// once: it fetches as many as there is room for in one request (a long
// poll of pullWait), and each message's heartbeats start when it arrives.
// A failed fetch (a lost connection, a consumer deleted or lost with a
// cluster's store) sets the consumer up afresh, with backoff.
func (r *Reconciler) pull(tenant string, cons jetstream.Consumer) {
	defer r.wg.Done()
	log := r.log.With().Str("tenant", tenant).Logger()
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
			cons, err = r.ensureConsumer(ctx, tenant)
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
		got, err := r.fetch(cons, tenant, n, room)
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

// tenantBuffer is how many fetched messages of one tenant may wait in the
// fair queue: enough that a busy tenant keeps every worker fed between two
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
func (r *Reconciler) fetch(cons jetstream.Consumer, tenant string, n int, room chan struct{}) (int, error) {
	ctx, cancel := context.WithTimeout(r.stopping, pullWait)
	defer cancel()
	batch, err := cons.Fetch(n, jetstream.FetchContext(ctx))
	if err != nil {
		return 0, err
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		r.queue.push(tenant, held{msg: msg, stopHeartbeat: heartbeat(msg, r.o.AckWait/3), release: func() { room <- struct{}{} }})
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
