package reconciler

import (
	"context"
)

// observe looks at the machine ensureMachine found recorded (a machine
// created in this pass is as its create answered; a waiting bootstrap
// uses the recorded one until a read is due, bootstrapReadDue): s.machine
// becomes what the provider reports, nil when it reports none.
func (r *Reconciler) observe(ctx context.Context, s *scope) (step, error) {
	if s.created || !r.bootstrapReadDue(&s.inst) {
		return next, nil
	}
	s.observed = true
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	observed, err := s.remote.Get(cctx, s.account, s.machine.ID)
	if err != nil {
		return next, err
	}
	s.machine = observed
	return next, nil
}
