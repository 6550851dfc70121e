package poolctl

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"better-compute.io/compute/pkg/api"
)

// m is a member of flavor small: ordinal, revision, phase.
func m(ordinal, rev int64, phase api.Phase) member {
	return member{slot: api.PoolSlot{Ordinal: ordinal, Flavor: "small", Revision: rev}, phase: phase}
}

// running is n Running members of revision rev, ordinals from..from+n-1.
func running(from, n, rev int64) []member {
	var out []member
	for i := range n {
		out = append(out, m(from+i, rev, api.PhaseRunning))
	}
	return out
}

func TestMakePlan(t *testing.T) {
	const R, P, F = api.PhaseRunning, api.PhaseProvisioning, api.PhaseFailed
	surge1 := api.PoolRollout{MaxSurge: 1, MaxUnavailable: 0}
	unavail1 := api.PoolRollout{MaxSurge: 0, MaxUnavailable: 1}
	both := api.PoolRollout{MaxSurge: 2, MaxUnavailable: 1}
	cases := []struct {
		name    string
		size    int
		rev     int64 // the pool's revision
		r       api.PoolRollout
		members []member
		deletes []int64
		creates int
	}{
		{"empty pool scales up at once", 50, 1, surge1, nil, nil, 50},
		{"at size: nothing", 3, 1, surge1, running(0, 3, 1), nil, 0},
		{"scale down: the newest go", 2, 1, surge1, running(0, 5, 1), []int64{2, 3, 4}, 0},
		{"scale up counts members on their way", 4, 1, surge1, []member{m(0, 1, R), m(1, 1, P)}, nil, 2},
		{"failed: deleted and replaced", 3, 1, surge1, []member{m(0, 1, R), m(1, 1, F), m(2, 1, R)}, []int64{1}, 1},
		{"scale down: failed first, then the newest", 1, 1, surge1, []member{m(0, 1, R), m(1, 1, F), m(2, 1, R)}, []int64{1, 2}, 0},
		{"deploy, surge 1: one new, no delete", 3, 2, surge1, running(0, 3, 1), nil, 1},
		{"deploy, surge 1: the new one is on its way: wait", 3, 2, surge1, append(running(0, 3, 1), m(3, 2, P)), nil, 0},
		{"deploy, surge 1: the new one runs: the oldest goes, the next comes", 3, 2, surge1,
			append(running(0, 3, 1), m(3, 2, R)), []int64{0}, 1},
		{"deploy, unavailable 1: one old goes, one new comes", 3, 2, unavail1, running(0, 3, 1), []int64{0}, 1},
		{"deploy, unavailable 1: waits for the new one", 3, 2, unavail1, append(running(1, 2, 1), m(5, 2, P)), nil, 0},
		{"deploy, surge 2 unavailable 1: one old goes, three new come", 4, 2, both, running(0, 4, 1), []int64{0}, 3},
		{"deploy: an old one on its way counts for nothing", 2, 2, surge1, []member{m(0, 1, P), m(1, 1, R)}, []int64{0}, 2},
		{"deploy done: the last old one goes", 2, 2, surge1, append(running(1, 2, 2), m(0, 1, R)), []int64{0}, 0},
		{"deploy: the oldest revision goes first", 2, 3, unavail1, []member{m(0, 2, R), m(1, 1, R)}, []int64{1}, 1},
		{"rollback mid-rollout counts the other revision as old", 2, 3, surge1, []member{m(0, 1, R), m(1, 2, R)}, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := makePlan(map[string]int{"small": c.size}, []string{"small"}, c.rev, c.r, c.members)
			assert.Equal(t, c.deletes, p.deletes, "deletes")
			assert.Equal(t, c.creates, p.creates["small"], "creates")
		})
	}
}

// A flavor the pool no longer sizes (or lost) is scaled to none.
func TestMakePlanUnsizedFlavor(t *testing.T) {
	members := running(0, 2, 1)
	members[1].slot.Flavor = "gone"
	p := makePlan(map[string]int{"small": 1}, []string{"small"}, 1, api.PoolRollout{MaxSurge: 1}, members)
	assert.Equal(t, []int64{1}, p.deletes)
	assert.Empty(t, p.creates)
}
