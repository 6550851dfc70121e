package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// publishEvent publishes an instance event on
// compute.v1.<tenant>.events.instances.<id>.<type>; the COMPUTE_EVENTS
// stream keeps it. Events are best effort: a failure is logged.
func (r *Reconciler) publishEvent(inst *api.Instance, typ api.EventType, message string) {
	ev := api.Event{ID: api.NewID(api.PrefixEvent), TenantID: inst.TenantID, Resource: bus.ResourceInstances,
		ResourceID: inst.ID, Type: typ, Phase: inst.Status.Phase, Message: message, Generation: inst.Generation,
		Labels: inst.Labels, Time: r.now()}
	data, _ := json.Marshal(ev)
	if err := r.nc.Publish(bus.Event(inst.TenantID, bus.ResourceInstances, inst.ID, string(typ)), data); err != nil {
		r.log.Warn().Err(err).Str("tenant", inst.TenantID).Str("instance", inst.ID).Msg("event not published")
	}
}

// enqueueTimeout bounds queueing one work message.
const enqueueTimeout = 10 * time.Second

// enqueue queues work for an instance (deduplicated per generation). It
// does not use the request's context: the record is written, so its work
// must be queued even when the caller has given up waiting. A failure is
// logged, not returned: the record is durable and the resync queues it again.
func (r *Reconciler) enqueue(inst *api.Instance) {
	ctx, cancel := context.WithTimeout(context.Background(), enqueueTimeout)
	defer cancel()
	// The creation time tells incarnations apart: an instance deleted and
	// created again under its idempotency key restarts at generation 1.
	r.publishWork(ctx, inst, fmt.Sprintf("%s-%d-%d", inst.ID, inst.CreatedAt.UnixNano(), inst.Generation))
}

// requeue queues work for an instance under a message id of its own, so it
// is never deduplicated against the work of the instance's generation.
func (r *Reconciler) requeue(inst *api.Instance) {
	ctx, cancel := context.WithTimeout(context.Background(), enqueueTimeout)
	defer cancel()
	r.publishWork(ctx, inst, fmt.Sprintf("%s-again-%d", inst.ID, time.Now().UnixNano()))
}

// publishWork publishes one work message of inst under its pool's account
// (bus.AccountWork; the pool's account is read once per pool and replica,
// accountOfPool), after making sure that account's work consumer exists
// and this replica pulls it (serveWork), retrying
// (with backoff, until ctx ends) while JetStream cannot take it, e.g.
// during the leader election after a NATS node is lost. The message id deduplicates retries whose
// first attempt did land.
func (r *Reconciler) publishWork(ctx context.Context, inst *api.Instance, msgID string) {
	tenant, id := inst.TenantID, inst.ID
	src := workSource{tenant: tenant, account: r.accountOfPool(ctx, tenant, inst.PoolID)}
	subject := bus.Work(tenant, id)
	if src.account != "" {
		subject = bus.AccountWork(tenant, src.account, id)
	}
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(100*time.Millisecond), backoff.WithMaxInterval(2*time.Second), backoff.WithMaxElapsedTime(0)), ctx)
	err := backoff.Retry(func() error {
		if err := r.serveWork(ctx, src); err != nil {
			return err
		}
		_, err := r.st.JS.Publish(ctx, subject, nil, jetstream.WithMsgID(msgID))
		return err
	}, b)
	if err != nil {
		r.log.Warn().Err(err).Str("tenant", tenant).Str("instance", id).Msg("work not queued; resync will")
	}
}
