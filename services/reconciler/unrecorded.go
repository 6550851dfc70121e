package reconciler

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
)

// findUnrecorded looks, for the deletion of an instance whose create's
// outcome is unknown (CreateRequested, no machine recorded: a timeout, a
// lost reply, a crash after the call), for a machine carrying the
// instance's key, without ever sending a create: a delete never creates.
//
// It pages through the account's machine list (the provider's list verb;
// machines report their idempotency key) and answers the machine found.
// When none carries the key, the record may go only once no create sent
// before the deletion can still land: every create call ends within
// CallTimeout (the provider honours the caller's deadline), so until twice
// that has passed since DeletionRequestedAt it answers a wait instead and
// the next look lists again. A provider without the list capability
// (UNSUPPORTED) gets the keyed create instead, which finds the machine or
// takes its name first, as the only look-up such a provider offers.
// Errors: the list's (RATE_LIMITED, PROVIDER_ERROR, …) or the create's.
func (r *Reconciler) findUnrecorded(ctx context.Context, t *target) (*api.ExternalMachine, time.Duration, error) {
	machines, err := r.listMachines(ctx, t.remote, t.account.ID, t.account)
	if api.IsCode(err, api.CodeUnsupported) {
		m, err := r.ensureMachine(ctx, t)
		if err != nil && createRefused(err) {
			// Not a first attempt, so the provider looked the key up before
			// refusing: no machine exists.
			return nil, 0, nil
		}
		return m, 0, err
	}
	if err != nil {
		return nil, 0, err
	}
	for _, m := range machines {
		if m.IdempotencyKey == t.inst.ID {
			t.log.Info().Str("machine", m.ID).Msg("unrecorded machine found by its key")
			return &m, 0, nil
		}
	}
	if requested := t.inst.DeletionRequestedAt; requested != nil {
		if wait := time.Until(requested.Add(2 * r.o.CallTimeout)); wait > 0 {
			return nil, min(wait, r.o.CallTimeout), nil
		}
	}
	t.log.Info().Msg("no machine carries the key: nothing to delete")
	return nil, 0, nil
}
