package reconciler

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
)

// resizeTimeout bounds one resize call: a Hetzner resize is a power-off,
// a change_type and a power-on, each waited for.
func (r *Reconciler) resizeTimeout() time.Duration { return 3 * r.o.CallTimeout }

// resizeLease is how long the instance's resize stays claimed by the pass
// executing it (0 when none is executing, or its lease ran out): no other
// pass acts on the machine meanwhile (it may be off, or locked).
func (r *Reconciler) resizeLease(inst *api.Instance) time.Duration {
	rs := inst.Status.Resize
	if rs == nil || rs.State != api.ResizeExecuting {
		return 0
	}
	return max(rs.StartedAt.Add(r.resizeTimeout()+claimMargin).Sub(r.o.Clock.Now()), 0)
}

// flavorOf is the name of the flavor the machine is on, as recorded
// (status.flavor), else the first of the pool's flavors whose offer is the
// machine's (the instance's own preferred), else the instance's.
func flavorOf(s *scope) string {
	if f := s.inst.Status.Flavor; f != "" {
		return f
	}
	m := s.machine
	if m == nil || m.OfferID == "" || m.OfferID == s.offerID {
		return s.inst.Flavor
	}
	for _, f := range s.flavors {
		if f.OfferID == m.OfferID {
			return f.Name
		}
	}
	return s.inst.Flavor
}

// offerOf is the offer of the pool's flavor called name ("" when the pool
// has none).
func offerOf(s *scope, name string) string {
	for _, f := range s.flavors {
		if f.Name == name {
			return f.OfferID
		}
	}
	return ""
}

// resize moves the machine to the instance's flavor when it is on another
// one (status.flavor), at most once per generation, as operation does
// for one-shot operations: the resize is claimed with a CAS write
// (status.resize, state Executing) before the provider is called, and its
// outcome recorded after; while the claim's lease lasts, no other pass
// acts on the machine. A claim still Executing after its lease is never
// sent again: the machine is re-observed instead, and the resize is
// Succeeded when the machine is on the new offer, Unknown otherwise.
// After any outcome, a look that finds the machine on the resize's offer
// records that flavor (a change that landed after its reply was lost).
//
// A resize the provider proves it did not run and that can pass later
// (details.notExecuted: 423 locked, 429) is sent again after the backoff;
// a refusal (INVALID_INPUT: a smaller disk than today's, an unknown
// offer) is Failed with path flavor; status.flavor and the Resized
// condition say which flavor the machine is on. A failed resize does not
// fail the instance: the machine runs on its old flavor, and the next
// phases bring its power back as desired (a Hetzner resize may have
// stopped it). A flavor whose offer the machine is already on is recorded
// without a call. A running machine of a pool with a drain step is
// drained first (drainBefore), once for the generation: a resize of a
// running machine may restart it. The pass ends whenever a resize was
// acted on.
func (r *Reconciler) resize(ctx context.Context, s *scope) (step, error) {
	m, rs := s.machine, s.inst.Status.Resize
	if rs != nil && rs.State == api.ResizeExecuting {
		// Its lease ran out (reconcile waits while it lasts): re-observe.
		if m.OfferID == rs.OfferID {
			return end(after(0)), r.finishResize(ctx, s, api.ResizeSucceeded, nil, nil, "interrupted; the machine was found on the new offer")
		}
		return end(after(0)), r.finishResize(ctx, s, api.ResizeUnknown, nil, nil,
			"interrupted after it may have been sent; the machine was found on offer "+m.OfferID+"; not repeated")
	}
	on, want := flavorOf(s), s.inst.Flavor
	if rs != nil && rs.Flavor != on && m.OfferID == rs.OfferID && m.OfferID != offerOf(s, on) {
		if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) { resizeLanded(st, m.OfferID) }); err != nil {
			return next, err
		}
		on = rs.Flavor
	}
	if on != s.inst.Status.Flavor {
		if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) { st.Flavor = on }); err != nil {
			return next, err
		}
	}
	if on == want {
		return next, nil
	}
	if m.OfferID == s.offerID {
		return next, r.writeStatus(ctx, s, func(st *api.InstanceStatus) { st.Flavor = want })
	}
	if rs != nil && rs.Flavor == want && rs.Generation == s.inst.Generation {
		return next, nil // this generation's resize ended; never sent twice
	}
	if m.State != api.StateRunning && m.State != api.StateStopped {
		return end(after(r.pollDelay(s.inst.Status.Polls + 1))), nil // on its way: resize a settled machine
	}
	// Destructive on a running machine (Hetzner powers it off, Proxmox
	// reboots it for what hot-plug does not take): the pool's drain step
	// first, once for this generation.
	if st, err := r.drainBefore(ctx, s, m, time.Time{}); err != nil || st.end {
		return st, err
	}
	return r.sendResize(ctx, s, on, want)
}

// sendResize claims the resize from flavor on to want, calls the
// provider and records the outcome (see resize).
func (r *Reconciler) sendResize(ctx context.Context, s *scope, on, want string) (step, error) {
	gen, prev := s.inst.Generation, s.inst.Status.Resize
	claimed := false
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		// Re-applied to the fresh record when the CAS write loses: only a
		// resize of this generation never claimed before is claimed.
		cur := st.Resize
		if claimed = s.inst.Generation == gen && s.inst.Flavor == want &&
			(cur == nil || cur.Generation != gen || cur.Flavor != want); !claimed {
			return
		}
		st.Resize = &api.ResizeStatus{Flavor: want, FromFlavor: on, OfferID: s.offerID, Generation: gen,
			State: api.ResizeExecuting, StartedAt: r.now()}
	}); err != nil {
		return next, err
	}
	if !claimed {
		return end(after(r.o.PollInterval)), nil
	}
	growDisk := false
	for _, f := range s.flavors {
		if f.Name == want {
			growDisk = f.GrowDisk
		}
	}
	cctx, cancel := context.WithTimeout(ctx, r.resizeTimeout())
	defer cancel()
	res, callErr := s.remote.Resize(cctx, api.ProviderResizeRequest{Account: s.account, ID: s.machine.ID,
		OfferID: s.offerID, DiskGrow: growDisk, Power: s.inst.Desired.Power})
	s.log.Info().Str("from", on).Str("flavor", want).Str("offer", s.offerID).AnErr("error", callErr).Msg("resize executed")
	if callErr == nil {
		return end(after(0)), r.finishResize(ctx, s, api.ResizeSucceeded, res, nil, "")
	}
	ce := api.AsComputeError(callErr)
	switch {
	case ce.NotExecuted() && !permanentRefusal(ce) && ce.Code != api.CodeNotFound && !ce.Code.Terminal():
		// Proven not run, and it can pass later: release the claim and
		// send it again after the backoff.
		if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
			if st.Resize != nil && st.Resize.State == api.ResizeExecuting && st.Resize.Generation == gen {
				st.Resize = prev
			}
		}); err != nil {
			return next, err
		}
		return next, callErr
	case !ce.NotExecuted() && (noReply(ce) || ce.Code == api.CodeRateLimited):
		return end(after(0)), r.finishResize(ctx, s, api.ResizeUnknown, nil, nil, "no reply, it may have run; not repeated: "+ce.Error())
	}
	return end(after(0)), r.finishResize(ctx, s, api.ResizeFailed, nil, ce, ce.Error())
}

// finishResize records the outcome of the claimed resize, only while the
// claim is still in the record: Succeeded moves status.flavor to the new
// flavor (and records the machine the provider answered); every outcome
// sets the Resized condition, whose message names the flavor the machine
// is on. A failure's path is "flavor" when the provider refused the offer.
func (r *Reconciler) finishResize(ctx context.Context, s *scope, state api.ResizeState, res *api.ResizeResult,
	failure *api.ComputeError, message string) error {
	now := r.now()
	return r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		if st.Resize == nil || st.Resize.State != api.ResizeExecuting {
			return
		}
		rs := *st.Resize
		rs.State, rs.Message, rs.FinishedAt = state, message, &now
		cond := api.Condition{Type: api.ConditionResized, Status: api.ConditionFalse}
		switch {
		case state == api.ResizeSucceeded:
			st.Flavor = rs.Flavor
			cond.Status, cond.Reason = api.ConditionTrue, api.ReasonResized
			cond.Message = "machine on flavor " + rs.Flavor + " (resized from " + rs.FromFlavor + ")"
			if res != nil {
				rs.Rebooted = res.Rebooted
				if res.Machine != nil {
					st.Machine = res.Machine
				}
			}
			st.Polls = 0
		case failure != nil:
			rs.Code = failure.Code
			if failure.Code == api.CodeInvalidInput {
				rs.Path = "flavor" // the offer the instance's flavor names
			}
			cond.Reason = api.ReasonOf(failure.Code)
			cond.Message = "machine on flavor " + rs.FromFlavor + "; resize to " + rs.Flavor + " failed: " + message
		default:
			cond.Reason = api.ReasonResizeUnknown
			cond.Message = "machine on flavor " + rs.FromFlavor + "; resize to " + rs.Flavor + ": " + message
		}
		st.Resize = &rs
		setCondition(st, cond)
	})
}

// resizeLanded records a resize found done after its outcome was recorded
// otherwise (Unknown, or Failed with the reply lost): the machine is on
// its offer, so it is Succeeded and status.flavor is its flavor.
func resizeLanded(st *api.InstanceStatus, offer string) {
	if st.Resize == nil || st.Resize.State == api.ResizeExecuting {
		return
	}
	rs := *st.Resize
	if rs.State != api.ResizeSucceeded {
		rs.Message = "the machine was found on offer " + offer + " after the resize was recorded " + string(rs.State) + ": " + rs.Message
		rs.State, rs.Code, rs.Path = api.ResizeSucceeded, "", ""
	}
	st.Resize, st.Flavor = &rs, rs.Flavor
	setCondition(st, api.Condition{Type: api.ConditionResized, Status: api.ConditionTrue, Reason: api.ReasonResized,
		Message: "machine on flavor " + rs.Flavor + " (resized from " + rs.FromFlavor + ")"})
}
