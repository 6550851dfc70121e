package reconciler

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
)

// converge records what the provider reports and decides whether to look
// again. A Drift condition (s.drift, when power set one) stays True until
// the machine has converged. A ProviderError condition is resolved, unless
// it records a failed one-shot operation (see operationFailure). Where the
// pool has a configure step, a running machine is ready only once
// configure succeeded for this generation (configurePending): until then
// Ready is False with the Configured condition's reason, and the pass
// looks again unless the configure failed finally. A machine that runs
// as desired but whose addresses are pending (AddressesPending) is not
// ready either: Ready is False AddressesPending and the pass looks again
// with the same growing delay, for at most maxAddressesWait from
// status.addressesPendingSince; then Ready says AddressesUnknown and the
// pass stops looking (the generation counts as observed).
func (r *Reconciler) converge(ctx context.Context, s *scope) (step, error) {
	m := s.machine
	converged := machineMatches(s.inst.Desired.Power, m.State)
	addressing := converged && addressesPending(s)
	since, gaveUp := r.now(), false
	if addressing && s.inst.Status.AddressesPendingSince != nil {
		since = *s.inst.Status.AddressesPendingSince
		gaveUp = r.now().Sub(since) >= maxAddressesWait
	}
	configuring := converged && !addressing && configurePending(s)
	settled := configuring && configureSettled(&s.inst) || gaveUp
	converged = converged && !configuring && !addressing
	polls := s.inst.Status.Polls + 1
	err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		st.Machine = m
		st.Retries, st.Polls = 0, polls
		st.AddressesPendingSince = nil
		resolveProviderError(st)
		if s.drift != nil {
			setCondition(st, *s.drift)
		}
		if addressing {
			st.AddressesPendingSince = &since
			reason, msg := api.ReasonAddressesPending, "machine "+m.ID+" runs; its addresses are pending (the provider cannot tell them yet)"
			if gaveUp {
				st.ObservedGeneration = s.inst.Generation
				reason = api.ReasonAddressesUnknown
				msg = "machine " + m.ID + " runs but its provider reported no address for " + maxAddressesWait.String() +
					" (Proxmox VE: is the QEMU guest agent installed and running in the image?)"
			}
			setReady(st, false, reason, msg)
		} else if configuring {
			if settled {
				st.ObservedGeneration = s.inst.Generation
			}
			reason, msg := api.ReasonConfiguring, "machine "+m.ID+" runs; configure not done"
			if c := statusCondition(st, api.ConditionConfigured); c != nil {
				reason, msg = c.Reason, c.Message
			}
			setReady(st, false, reason, msg)
		} else if converged {
			st.ObservedGeneration = s.inst.Generation
			st.Polls = 0
			resolve(st, api.ConditionDrift)
			setReady(st, true, api.ReasonConverged, "machine "+m.ID+" is "+string(m.State))
		} else {
			setReady(st, false, api.ReasonConverging, "machine "+m.ID+" is "+string(m.State)+"; desired power "+string(s.inst.Desired.Power))
		}
	})
	if err != nil || converged || settled {
		return end(finished), err
	}
	return end(after(r.pollDelay(polls))), nil
}

// maxAddressesWait is how long converge looks again at a running machine
// whose addresses are pending before Ready says AddressesUnknown.
const maxAddressesWait = 10 * time.Minute

// addressesPending reports whether the machine runs, as desired, with its
// addresses pending: the configure step waits and converge looks again.
func addressesPending(s *scope) bool {
	m := s.machine
	return m != nil && m.State == api.StateRunning && m.AddressesPending && s.inst.Desired.Power == api.PowerOn
}

// maxPollDelay caps the wait between two looks at a converging machine.
const maxPollDelay = 30 * time.Second

// pollDelay is the wait before looking again at a machine that look
// number polls (status.Polls) found still converging: PollInterval after the
// first look since the reconciler acted on it or a call failed, doubling
// with every further look (a server that boots in 10 s is not polled every
// 2 s), at most maxPollDelay. It follows the machine, not the retries
// before: a pass's work message may have been delivered many times.
func (r *Reconciler) pollDelay(polls int) time.Duration {
	d := r.o.PollInterval
	for i := 1; i < polls && d < maxPollDelay; i++ {
		d *= 2
	}
	return min(d, max(maxPollDelay, r.o.PollInterval))
}
