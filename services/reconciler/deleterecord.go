package reconciler

import (
	"context"

	"better-compute.io/compute/pkg/api"
)

// deleteRecord is the delete path's last phase: no machine of the
// instance remains, so its record goes (at the revision read: a pass that
// wrote the record meanwhile, e.g. to send a create, makes this pass
// start over) and the deleted event is published.
func (r *Reconciler) deleteRecord(ctx context.Context, s *scope) (step, error) {
	if err := r.instances.Delete(ctx, s.inst.TenantID, s.inst.ID, s.rev); err != nil {
		if api.IsCode(err, api.CodeConflict) {
			return end(after(0)), nil
		}
		return next, storeError{err}
	}
	r.releaseInstance(ctx, s.inst.TenantID, s.inst.PoolID)
	s.log.Info().Msg("instance deleted")
	r.publishEvent(&s.inst, api.EventDeleted, "")
	return end(finished), nil
}
