package reconciler

import (
	"context"
	"errors"
	"strconv"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
)

// gracefulOffCommand is what a graceful-off over SSH runs: systemd's
// poweroff, queued without waiting for it, so the command exits before
// the OS stops sshd. Guess: the image runs systemd (one without it fails
// the operation).
const gracefulOffCommand = "systemctl poweroff --no-block"

// gracefulOffOverSSH is the graceful-off of a machine whose provider
// cannot send one (the provider answered unsupported, UNSUPPORTED: Robot's
// resets cannot reach the OS), sent to its OS over SSH where the pool has
// access and a host key is pinned for the machine (gracefulOffCommand).
// The operation's claim covers it: it runs at most once. Errors:
// unsupported (no access, or no host key pinned: the OS is not reached);
// UNAVAILABLE with details.notExecuted (SSH did not connect: sent again
// after the backoff); UNAVAILABLE (the session ended without an exit
// status: it may have run, not repeated); INVALID_STATE, permanent (the
// host key changed, or the command exited non-zero); those of
// accessTarget.
func (r *Reconciler) gracefulOffOverSSH(ctx context.Context, s *scope, unsupported error) error {
	if s.access == nil {
		return unsupported
	}
	target, err := r.accessTarget(ctx, &s.inst, s.access, s.machine)
	if err != nil {
		return err
	}
	if target.PinnedHostKey == "" {
		return api.Errorf(api.CodeUnsupported, "graceful-off: the provider cannot send one, and machine %s has no host key "+
			"pinned to reach its OS over SSH", s.machine.ID)
	}
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	conn, err := access.Connect(cctx, target)
	if err != nil {
		ce := api.Errorf(api.CodeUnavailable, "graceful-off over SSH: %s", accessMessage(err))
		if errors.Is(err, access.ErrHostKeyChanged) {
			ce = api.Errorf(api.CodeInvalidState, "graceful-off over SSH: %s", accessMessage(err))
			ce.Details.Permanent = true
		}
		ce.Details.NotExecuted = true
		return ce
	}
	defer conn.Close()
	res, err := conn.Run(cctx, access.Command{Line: gracefulOffCommand, Limit: api.StepOutputTailBytes})
	switch {
	case err != nil:
		return api.Errorf(api.CodeUnavailable, "graceful-off over SSH: %s ended without an exit status: %s", gracefulOffCommand,
			accessMessage(err))
	case res.ExitCode != 0:
		_, _, _, tail := stepOutcome(res, nil)
		ce := api.Errorf(api.CodeInvalidState, "graceful-off over SSH: %s exited %s: %s", gracefulOffCommand,
			strconv.Itoa(res.ExitCode), tail)
		ce.Details.Permanent = true
		return ce
	}
	s.log.Info().Str("machine", s.machine.ID).Msg("graceful-off sent over SSH")
	return nil
}
