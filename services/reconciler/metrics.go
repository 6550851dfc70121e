package reconciler

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/metrics"
)

// observePass records a pass that began at start in metrics.ReconcilePasses
// and metrics.ReconcileDuration, by the outcome handle gives it: cancelled
// (an error while the replica stops), abandoned (a state store error),
// done (acknowledged) or requeued.
func observePass(ctx context.Context, start time.Time, out *outcome, err *error) {
	o := metrics.OutcomeRequeued
	switch {
	case *err != nil && ctx.Err() != nil:
		o = metrics.OutcomeCancelled
	case *err != nil:
		o = metrics.OutcomeAbandoned
	case out.done:
		o = metrics.OutcomeDone
	}
	metrics.ReconcilePasses.WithLabelValues(o).Inc()
	metrics.ReconcileDuration.WithLabelValues(o).Observe(time.Since(start).Seconds())
}

// observePacing records a wait a provider account's budget imposed.
func observePacing(provider string, wait time.Duration) {
	metrics.PacingWaits.WithLabelValues(provider).Inc()
	metrics.PacingWaitSeconds.WithLabelValues(provider).Add(wait.Seconds())
}

// observeResync records a resync that began at start and ended with err.
func observeResync(start time.Time, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	metrics.ResyncDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
}

// Descriptions of the samples Collector reads at scrape time.
var (
	instancesDesc = prometheus.NewDesc("compute_instances",
		"Instances by phase (a series for each phase that has instances).", []string{"phase"}, nil)
	conditionsDesc = prometheus.NewDesc("compute_instance_conditions",
		"Instances by condition type, status and reason.", []string{"type", "status", "reason"}, nil)
	notReadyAgeDesc = prometheus.NewDesc("compute_instance_not_ready_max_age_seconds",
		"Time since the Ready condition of the longest not-Ready instance changed, by phase.", []string{"phase"}, nil)
	queueDepthDesc = prometheus.NewDesc("compute_work_queue_messages",
		"Work messages not yet acknowledged (waiting, held by a replica, or delayed for a later look).", nil, nil)
	queueUnackedDesc = prometheus.NewDesc("compute_work_queue_unacknowledged_messages",
		"Work messages delivered to a replica and not acknowledged yet (running, waiting for a worker, or delayed).", nil, nil)
	queueAgeDesc = prometheus.NewDesc("compute_work_queue_oldest_message_age_seconds",
		"Age of the oldest work message not yet acknowledged (0 when the queue is empty).", nil, nil)
	budgetRemainingDesc = prometheus.NewDesc("compute_provider_ratelimit_remaining",
		"Estimated provider API requests left in the account's rate-limit budget now (accounts that reported one).",
		[]string{"account"}, nil)
	budgetLimitDesc = prometheus.NewDesc("compute_provider_ratelimit_limit",
		"The account's rate-limit budget when full, as the provider last reported it.", []string{"account"}, nil)
)

// collectTimeout bounds the reads of one scrape.
const collectTimeout = 10 * time.Second

// collector samples the reconciler's state at scrape time (see Collector).
type collector struct{ r *Reconciler }

// Collector is the reconciler's sampled metrics, read when scraped:
// instances by phase and by condition, the age of the longest not-Ready
// instance, the work queue's depth and oldest message age (COMPUTE_WORK
// stream and consumer info) and each paced account's rate-limit budget.
// The instance samples come from the replica's instance index (list.go),
// caught up to the bucket like a list: a scrape reads memory, not one
// record per instance. Register it with metrics.Register.
func (r *Reconciler) Collector() prometheus.Collector { return collector{r} }

// Describe implements prometheus.Collector.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{instancesDesc, conditionsDesc, notReadyAgeDesc, queueDepthDesc,
		queueUnackedDesc, queueAgeDesc, budgetRemainingDesc, budgetLimitDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A sample whose read fails is
// left out and reported as an invalid metric (promhttp logs it).
func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	now := c.r.o.Clock.Now()
	if err := c.collectInstances(ctx, ch, now); err != nil {
		ch <- prometheus.NewInvalidMetric(instancesDesc, err)
	}
	if err := c.collectQueue(ctx, ch, time.Now()); err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, err)
	}
	for _, b := range c.r.budgets.samples(now) {
		ch <- prometheus.MustNewConstMetric(budgetRemainingDesc, prometheus.GaugeValue, b.remaining, b.account)
		ch <- prometheus.MustNewConstMetric(budgetLimitDesc, prometheus.GaugeValue, b.limit, b.account)
	}
}

type conditionKey struct{ typ, status, reason string }

func (c collector) collectInstances(ctx context.Context, ch chan<- prometheus.Metric, now time.Time) error {
	phases := map[api.Phase]float64{}
	conditions := map[conditionKey]float64{}
	notReady := map[api.Phase]time.Duration{}
	err := c.r.index.Views(ctx, func(_ string, inst *api.Instance) {
		s := &inst.Status
		phases[s.Phase]++
		for _, cond := range s.Conditions {
			conditions[conditionKey{string(cond.Type), string(cond.Status), string(cond.Reason)}]++
			if cond.Type == api.ConditionReady && cond.Status != api.ConditionTrue {
				notReady[s.Phase] = max(notReady[s.Phase], now.Sub(cond.LastTransitionTime))
			}
		}
	})
	if err != nil {
		return err
	}
	for p, n := range phases {
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, n, string(p))
	}
	for k, n := range conditions {
		ch <- prometheus.MustNewConstMetric(conditionsDesc, prometheus.GaugeValue, n, k.typ, k.status, k.reason)
	}
	for p, age := range notReady {
		ch <- prometheus.MustNewConstMetric(notReadyAgeDesc, prometheus.GaugeValue, age.Seconds(), string(p))
	}
	return nil
}

// collectQueue reads the work stream (work-queue retention: a message
// leaves it when acknowledged, so its first message is the oldest
// unacknowledged one) and the tenants' work consumers.
func (c collector) collectQueue(ctx context.Context, ch chan<- prometheus.Metric, now time.Time) error {
	stream, err := c.r.st.JS.Stream(ctx, bus.StreamWork)
	if err != nil {
		return err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	age := 0.0
	if info.State.Msgs > 0 {
		age = max(now.Sub(info.State.FirstTime).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(info.State.Msgs))
	ch <- prometheus.MustNewConstMetric(queueAgeDesc, prometheus.GaugeValue, age)
	// every work consumer (WorkConsumer, one per tenant account): none before a first work
	unacked := 0
	lister := stream.ListConsumers(ctx)
	for ci := range lister.Info() {
		if strings.HasPrefix(ci.Name, workConsumerPrefix) {
			unacked += ci.NumAckPending
		}
	}
	if err := lister.Err(); err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(queueUnackedDesc, prometheus.GaugeValue, float64(unacked))
	return nil
}
