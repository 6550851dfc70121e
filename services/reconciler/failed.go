package reconciler

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
)

// failed records a provider or lookup failure as the ProviderError and
// Ready conditions: terminal codes and permanent refusals are a terminal
// failure of this generation (ProviderError without RetryAt and
// ObservedGeneration set: the phase derived is Failed, see derivePhase),
// others are retried with backoff (RetryAt), as is a power action the
// provider cannot send (scope.powerRefused). A storeError is returned as
// is (the work message is redelivered).
func (r *Reconciler) failed(ctx context.Context, s *scope, err error) (outcome, error) {
	if isStoreError(err) {
		return outcome{}, err
	}
	ce := api.AsComputeError(err)
	now := r.now()
	reason := failureReason(ce)
	if !s.powerRefused && (ce.Code.Terminal() || permanentRefusal(ce) && !r.nameBeingFreed(ctx, s, ce)) {
		s.log.Warn().Str("code", string(ce.Code)).Str("error", ce.Message).Msg("instance failed")
		if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
			st.ObservedGeneration = s.inst.Generation
			setCondition(st, api.Condition{Type: api.ConditionProviderError, Status: api.ConditionTrue, Reason: reason, Message: ce.Message})
			setReady(st, false, reason, ce.Message)
		}); err != nil {
			return outcome{}, err
		}
		return finished, nil
	}
	var delay time.Duration
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		// Counted inside the CAS write: a pass that overlaps another (or a
		// retried write) never loses an increment, so backoff keeps growing.
		// The next look that succeeds starts the poll delay afresh.
		st.Retries++
		st.Polls = 0
		delay = r.o.Retry.Delay(st.Retries, ce.RetryAfter())
		retryAt := now.Add(delay)
		setCondition(st, api.Condition{Type: api.ConditionProviderError, Status: api.ConditionTrue,
			Reason: reason, Message: ce.Message, RetryAt: &retryAt})
		setReady(st, false, reason, ce.Message)
	}); err != nil {
		return outcome{}, err
	}
	s.log.Warn().Str("code", string(ce.Code)).Str("error", ce.Message).Int("retries", s.inst.Status.Retries).
		Int64("retry_in_ms", delay.Milliseconds()).Msg("reconcile failed; will retry")
	return after(delay), nil
}
