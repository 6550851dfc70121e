package poolctl

import (
	"fmt"
	"slices"
	"time"

	"better-compute.io/compute/pkg/api"
)

// status derives the pool's status from its slots and the instances the
// pass saw (see api.PoolStatus); problem, when set, is the message.
func status(p *api.Pool, slots []api.PoolSlot, insts map[string]api.Instance, problem string) api.PoolStatus {
	now := time.Now().UTC()
	st := api.PoolStatus{ObservedVersion: p.Version, TargetRevision: p.Revision, CurrentRevision: p.Revision,
		Flavors: []api.PoolFlavorStatus{}, UpdatedAt: now}
	r := p.RolloutOrDefault()
	names := flavorNames(p)
	for _, sl := range slots {
		if !slices.Contains(names, sl.Flavor) {
			names = append(names, sl.Flavor)
		}
	}
	available, rolling, scaling := true, false, false
	for _, f := range names {
		fs := api.PoolFlavorStatus{Flavor: f}
		if slices.Contains(flavorNames(p), f) {
			fs.Size = p.Sizes[f]
		}
		for _, sl := range slots {
			if sl.Flavor != f || sl.DeleteRequested {
				continue
			}
			fs.Replicas++
			if sl.Revision == p.Revision {
				fs.Updated++
			} else {
				rolling = true
				st.CurrentRevision = min(st.CurrentRevision, sl.Revision)
			}
			if insts[sl.InstanceID].Status.Phase == api.PhaseRunning {
				fs.Ready++
			}
		}
		if fs.Replicas != fs.Size || fs.Ready != fs.Replicas {
			scaling = true
		}
		if fs.Ready < fs.Size-r.MaxUnavailable {
			available = false
		}
		st.Replicas += fs.Replicas
		st.Updated += fs.Updated
		st.Ready += fs.Ready
		if fs.Size > 0 || fs.Replicas > 0 {
			st.Flavors = append(st.Flavors, fs)
		}
	}
	for _, sl := range slots {
		if sl.DeleteRequested {
			scaling = true // an instance still going counts as work left
		}
	}
	size := 0
	for _, fs := range st.Flavors {
		size += fs.Size
	}
	progressing := api.Condition{Type: api.ConditionProgressing, Status: api.ConditionTrue, LastTransitionTime: now}
	switch {
	case rolling:
		st.Rollout, progressing.Reason = api.RolloutProgressing, api.ReasonNewRevision
		st.Message = fmt.Sprintf("revision %d: %d of %d updated, %d ready", p.Revision, st.Updated, size, st.Ready)
	case scaling:
		st.Rollout, progressing.Reason = api.RolloutScaling, api.ReasonScaling
		st.Message = fmt.Sprintf("%d of %d replicas, %d ready", st.Replicas, size, st.Ready)
	default:
		st.Rollout, progressing.Status, progressing.Reason = api.RolloutComplete, api.ConditionFalse, api.ReasonComplete
		st.Message = fmt.Sprintf("%d replicas of revision %d ready", st.Ready, p.Revision)
	}
	if problem != "" {
		st.Message = problem
	}
	avail := api.Condition{Type: api.ConditionAvailable, Status: api.ConditionTrue, Reason: api.ReasonMinimum, LastTransitionTime: now}
	if !available {
		avail.Status, avail.Reason = api.ConditionFalse, api.ReasonBelowMin
	}
	st.Conditions = []api.Condition{avail, progressing}
	return st
}

// keepTransitions is next with the lastTransitionTime of each condition
// whose status did not change since prev.
func keepTransitions(prev, next api.PoolStatus) api.PoolStatus {
	for i, c := range next.Conditions {
		for _, p := range prev.Conditions {
			if p.Type == c.Type && p.Status == c.Status {
				next.Conditions[i].LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return next
}
