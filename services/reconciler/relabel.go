package reconciler

import (
	"context"
	"maps"
	"slices"

	"better-compute.io/compute/pkg/api"
)

// relabel gives the machine the instance's labels when they differ from
// the ones it was last given (status.appliedLabels: at its create, or by
// the last relabel), with the provider's relabel (which keeps the
// provider's system labels). A provider without the labels capability
// answers UNSUPPORTED: its machines carry no labels, so the labels stay
// the control plane's alone, recorded as applied (a label change is not
// a failure of the instance). Other failures end the pass through failed
// (retried with backoff). It compares with what was given, not with what
// the machine reports (Machine.Labels): a Proxmox VE tag form is lossy,
// so a report may never equal the labels.
func (r *Reconciler) relabel(ctx context.Context, s *scope) (step, error) {
	want := s.inst.Labels
	if maps.Equal(want, s.inst.Status.AppliedLabels) {
		return next, nil
	}
	sent := labelsToSend(want)
	cctx, cancel := r.callCtx(ctx)
	m, err := s.remote.Relabel(cctx, s.account, s.machine.ID, sent)
	cancel()
	unsupported := api.IsCode(err, api.CodeUnsupported)
	if err != nil && !unsupported {
		return next, err
	}
	s.log.Info().Str("machine", s.machine.ID).Strs("labels", slices.Sorted(maps.Keys(sent))).Bool("unsupported", unsupported).
		Msg("machine relabelled")
	if m != nil {
		s.machine = m
	}
	return next, r.writeStatus(ctx, s, func(st *api.InstanceStatus) { st.AppliedLabels = appliedLabels(sent) })
}

// labelsToSend is labels as a relabel sends them: never nil (an empty
// object removes every user label).
func labelsToSend(labels map[string]string) map[string]string {
	if labels == nil {
		return map[string]string{}
	}
	return maps.Clone(labels)
}

// appliedLabels is labels as status.appliedLabels records them: nil when
// empty.
func appliedLabels(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	return maps.Clone(labels)
}
