package poolctl

import (
	"cmp"
	"slices"

	"better-compute.io/compute/pkg/api"
)

// member is one slot of a pool as a pass sees it: the slot, and the phase
// of its instance ("" while the create has not answered yet).
type member struct {
	slot  api.PoolSlot
	phase api.Phase
}

func (m member) ready() bool { return m.phase == api.PhaseRunning }

// plan is what one pass does to a pool: the ordinals of the slots to
// delete, and how many instances of each flavor to make.
type plan struct {
	deletes []int64
	creates map[string]int
}

// makePlan decides a pass over members (every slot not being deleted) of
// a pool whose sizes, flavors (pool order), current revision and rollout
// are given; see the package doc for the rules. Flavors with members but no
// size (or a flavor the pool lost) count as size 0.
func makePlan(sizes map[string]int, flavors []string, revision int64, r api.PoolRollout, members []member) plan {
	p := plan{creates: map[string]int{}}
	byFlavor := map[string][]member{}
	for _, m := range members {
		byFlavor[m.slot.Flavor] = append(byFlavor[m.slot.Flavor], m)
	}
	names := slices.Clone(flavors)
	for f := range byFlavor {
		if !slices.Contains(names, f) {
			names = append(names, f)
		}
	}
	for _, f := range names {
		n := 0
		if slices.Contains(flavors, f) {
			n = sizes[f]
		}
		dels, creates := planFlavor(n, revision, r, byFlavor[f])
		p.deletes = append(p.deletes, dels...)
		if creates > 0 {
			p.creates[f] = creates
		}
	}
	slices.Sort(p.deletes)
	return p
}

// planFlavor is makePlan for one flavor of size n.
func planFlavor(n int, revision int64, r api.PoolRollout, ms []member) (deletes []int64, creates int) {
	var current, old []member
	for _, m := range ms {
		switch {
		case m.phase == api.PhaseFailed:
			deletes = append(deletes, m.slot.Ordinal)
		case m.slot.Revision == revision:
			current = append(current, m)
		case !m.ready():
			deletes = append(deletes, m.slot.Ordinal) // an old one on its way counts for nothing
		default:
			old = append(old, m)
		}
	}
	if len(current) > n { // the surplus: the newest first
		slices.SortFunc(current, func(a, b member) int { return cmp.Compare(b.slot.Ordinal, a.slot.Ordinal) })
		for _, m := range current[:len(current)-n] {
			deletes = append(deletes, m.slot.Ordinal)
		}
		current = current[len(current)-n:]
	}
	ready := len(old)
	for _, m := range current {
		if m.ready() {
			ready++
		}
	}
	// old ones go as availability allows: the oldest revision, then the oldest ordinal, first
	slices.SortFunc(old, func(a, b member) int {
		return cmp.Or(cmp.Compare(a.slot.Revision, b.slot.Revision), cmp.Compare(a.slot.Ordinal, b.slot.Ordinal))
	})
	drop := min(len(old), max(0, ready-max(0, n-r.MaxUnavailable)))
	for _, m := range old[:drop] {
		deletes = append(deletes, m.slot.Ordinal)
	}
	total := len(current) + len(old) - drop
	creates = max(0, min(n-len(current), n+r.MaxSurge-total))
	return deletes, creates
}
