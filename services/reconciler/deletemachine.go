package reconciler

import (
	"context"

	"better-compute.io/compute/pkg/api"
)

// deleteMachine is the delete path's first phase: it asks the provider to
// delete the recorded machine (absence counts as done) and ends the pass
// until the provider no longer reports it. With no machine recorded, or
// the recorded one gone, the pass goes on (deleteUnrecorded: a half-made
// machine of the key may remain, e.g. a Proxmox reinstall's untagged
// clone, which get does not show).
func (r *Reconciler) deleteMachine(ctx context.Context, s *scope) (step, error) {
	m := s.inst.Status.Machine
	if m == nil {
		return next, nil
	}
	cctx, cancel := r.callCtx(ctx)
	observed, err := s.remote.Get(cctx, s.account, m.ID)
	cancel()
	if err != nil || observed == nil {
		return next, err
	}
	polls := s.inst.Status.Polls + 1
	if observed.State != api.StateDeleting {
		cctx, cancel := r.callCtx(ctx)
		err := s.remote.Delete(cctx, s.account, m.ID)
		cancel()
		if err != nil && !api.IsCode(err, api.CodeNotFound) {
			return next, err
		}
		s.log.Info().Str("machine", m.ID).Msg("machine delete requested")
		polls = 1
	}
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) { st.Retries, st.Polls = 0, polls }); err != nil {
		return next, err
	}
	return end(after(r.pollDelay(polls))), nil
}
