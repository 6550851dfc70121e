package reconciler

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
)

// deleteUnrecorded deletes, for the deletion of an instance whose create
// was requested (CreateRequested), every machine carrying the instance's
// key that its record does not show, without ever sending a create: a
// delete never creates. Such a machine exists when the create's outcome is
// unknown (a timeout, a lost reply, a crash after the call: no machine
// recorded), or when the recorded machine reads absent while a new one of
// the key is half made (a Proxmox reinstall's clone, untagged until its
// last step, which get and list do not show).
//
// It asks the provider to delete by key (delete with no id, capability
// delete.byKey), which finds finished and half-made machines alike:
//   - success: deletes were requested; the record stays and the next pass
//     (after the poll delay) asks again;
//   - NOT_FOUND: no machine carries the key. With no machine recorded, the
//     last create attempt may still land: every create call ends within
//     CallTimeout (the provider honours the caller's deadline), so until
//     twice that has passed since it was sent (lastCreateSent) the record
//     stays and the next pass asks once more; then the record may go
//     (done). A pass that sends another create meanwhile writes the record
//     first, so the record's delete (at the revision read) fails and the
//     next pass waits for that one;
//   - UNSUPPORTED (a provider without delete.byKey): with no machine
//     recorded, the keyed create is the only look-up such a provider
//     offers (createToFind); with one recorded and absent, the record may
//     go;
//   - any other error is retried as failed says.
func (r *Reconciler) deleteUnrecorded(ctx context.Context, t *scope) (step, error) {
	if !t.inst.Status.CreateRequested && !machineMissing(&t.inst) {
		return next, nil // no create was sent since the machine was last seen
	}
	cctx, cancel := r.callCtx(ctx)
	err := t.remote.DeleteByKey(cctx, t.account, t.inst.ID)
	cancel()
	recorded := t.inst.Status.Machine != nil
	switch {
	case err == nil:
		polls := t.inst.Status.Polls + 1
		t.log.Info().Int("polls", polls).Msg("unrecorded machine carrying the key: delete requested")
		if err := r.writeStatus(ctx, t, func(s *api.InstanceStatus) { s.Retries, s.Polls = 0, polls }); err != nil {
			return next, err
		}
		return end(after(r.pollDelay(polls))), nil
	case api.IsCode(err, api.CodeUnsupported) && recorded:
		t.log.Info().Msg("provider cannot delete by idempotency key; the recorded machine is gone")
		return next, nil
	case api.IsCode(err, api.CodeUnsupported):
		return r.createToFind(ctx, t)
	case !api.IsCode(err, api.CodeNotFound):
		return next, err
	}
	if sent := lastCreateSent(&t.inst); sent != nil && !recorded {
		if wait := sent.Add(2 * r.o.CallTimeout).Sub(r.o.Clock.Now()); wait > 0 {
			return end(after(min(wait, r.o.CallTimeout))), nil
		}
	}
	t.log.Info().Msg("no machine carries the key: nothing to delete")
	return next, nil
}

// createToFind looks the key up with the keyed create, for a provider
// without delete.byKey: it finds the key's machine (recorded by
// createMachine, so the next pass deletes it by id) or, for a provider
// that takes the name first, makes it. A refused create (not a first
// attempt, so the provider looked the key up before refusing) means no
// machine exists: done.
func (r *Reconciler) createToFind(ctx context.Context, t *scope) (step, error) {
	t.log.Warn().Msg("provider cannot delete by idempotency key: a keyed create looks the key up")
	m, err := r.createMachine(ctx, t)
	switch {
	case err != nil && createRefused(err):
		return next, nil
	case err != nil:
		return next, err
	}
	t.log.Info().Str("machine", m.ID).Msg("unrecorded machine found by its key")
	return end(after(0)), nil
}

// lastCreateSent is when the instance's last create attempt was recorded
// (CreateRequestedAt), or, for a record written before that field
// existed, when its deletion was requested; nil when neither is known.
func lastCreateSent(inst *api.Instance) *time.Time {
	if at := inst.Status.CreateRequestedAt; at != nil {
		return at
	}
	return inst.DeletionRequestedAt
}
