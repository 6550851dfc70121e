package hetzner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// Spread placement (capability placement.spread).
//
// The provider keeps a pool's spread placement groups itself: each is
// labelled <prefix>/managed=true and <prefix>/pool=<pool id label value>,
// named "<pool id>-spread-<n>", and holds at most MaxServersPerGroup
// servers (Hetzner's limit). A create picks the pool's group with room
// (lowest id first) or creates the next one, and sends it in the one POST
// /servers ("placement_group"). When a group is full after all (another
// replica filled it: 422 placement_group_member_limit_reached) the create
// picks again.
//
// Empty groups are deleted by the spread creates of the account: every
// pick lists the account's managed groups and deletes those that have no
// server and are older than EmptyGroupGrace (and are not being filled by a
// create of this replica). That covers a group whose servers were all
// deleted, the groups of a deleted pool, and a group created by a create
// that crashed before its POST /servers (labelled from the start, so
// found); a group is never deleted while young, so a concurrent create
// that just made it can still use it. An account that makes no spread
// create any more keeps its last empty groups until one does (Hetzner
// allows 50 groups a project).

// MaxServersPerGroup is how many servers a Hetzner spread placement group
// holds.
const MaxServersPerGroup = 10

// EmptyGroupGrace is how old an empty managed placement group must be
// before a spread create deletes it.
const EmptyGroupGrace = 10 * time.Minute

// maxGroupPicks bounds the picks of one create that finds its groups full.
const maxGroupPicks = 3

// spreadGroups tracks, per account client, the placement group slots
// taken by creates in flight (their servers are not members yet).
type spreadGroups struct {
	mu       sync.Mutex
	pending  map[int64]int // group id → creates in flight into it
	pickLock map[string]*sync.Mutex
}

// lockPool serialises the picks of one pool in this replica.
func (g *spreadGroups) lockPool(pool string) func() {
	g.mu.Lock()
	if g.pickLock == nil {
		g.pickLock, g.pending = map[string]*sync.Mutex{}, map[int64]int{}
	}
	l := g.pickLock[pool]
	if l == nil {
		l = &sync.Mutex{}
		g.pickLock[pool] = l
	}
	g.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (g *spreadGroups) inFlight(id int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pending[id]
}

func (g *spreadGroups) add(id int64, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending[id] += n
	if g.pending[id] <= 0 {
		delete(g.pending, id)
	}
}

// groupName is the name of a pool's n-th spread group.
func groupName(pool string, n int) string {
	return fmt.Sprintf("%s-spread-%d", strings.ToLower(KeyLabelValue(pool)), n)
}

// pickGroup returns the pool's spread group with room, creating the next
// one when all are full, and a release to call once the POST /servers that
// uses it has been answered. full lists groups the API called full during
// this create. It costs GET /placement_groups?label_selector=<prefix>/managed=true
// (one page: a project has at most 50 groups), a POST /placement_groups
// when no group has room, and a DELETE per empty group swept.
func (c *client) pickGroup(ctx context.Context, s *session, pool string, full []int64) (*hcloud.PlacementGroup, func(), error) {
	unlock := c.groups.lockPool(pool)
	defer unlock()
	groups, _, err := s.api.PlacementGroup.List(ctx, hcloud.PlacementGroupListOpts{
		ListOpts: hcloud.ListOpts{LabelSelector: c.labels.managedSelector(), PerPage: listPageSize},
		Sort:     []string{"id:asc"},
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(groups, func(a, b *hcloud.PlacementGroup) int { return int(a.ID - b.ID) })
	poolValue := KeyLabelValue(pool)
	var chosen *hcloud.PlacementGroup
	next := 1
	for _, g := range groups {
		if g.Labels[c.labels.pool] != poolValue {
			continue
		}
		next = max(next, groupIndex(g.Name, pool)+1)
		if chosen == nil && !slices.Contains(full, g.ID) && len(g.Servers)+c.groups.inFlight(g.ID) < MaxServersPerGroup {
			chosen = g
		}
	}
	c.sweepGroups(ctx, s, groups, chosen)
	if chosen == nil {
		res, _, err := s.api.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{
			Name: groupName(pool, next), Type: hcloud.PlacementGroupTypeSpread,
			Labels: map[string]string{c.labels.managed: "true", c.labels.pool: poolValue},
		})
		if err != nil {
			return nil, nil, err
		}
		chosen = res.PlacementGroup
	}
	c.groups.add(chosen.ID, 1)
	id := chosen.ID
	return chosen, func() { c.groups.add(id, -1) }, nil
}

// groupIndex is n of a group named groupName(pool, n), 0 for another name.
func groupIndex(name, pool string) int {
	var n int
	if _, err := fmt.Sscanf(strings.TrimPrefix(name, strings.ToLower(KeyLabelValue(pool))+"-spread-"), "%d", &n); err != nil {
		return 0
	}
	return n
}

// sweepGroups deletes the managed groups that are empty, older than
// EmptyGroupGrace, not keep and not being filled by a create in flight.
// A failed delete is logged and left for the next sweep: it must not
// fail the create.
func (c *client) sweepGroups(ctx context.Context, s *session, groups []*hcloud.PlacementGroup, keep *hcloud.PlacementGroup) {
	now := s.call.Clock.Now()
	for _, g := range groups {
		if len(g.Servers) > 0 || (keep != nil && g.ID == keep.ID) || c.groups.inFlight(g.ID) > 0 ||
			now.Sub(g.Created) < EmptyGroupGrace {
			continue
		}
		if _, err := s.api.PlacementGroup.Delete(ctx, g); err != nil && !hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
			s.call.Log.Warn().Int64("placement_group", g.ID).Str("error", err.Error()).Msg("empty placement group not deleted; next sweep retries")
			continue
		}
		s.call.Log.Info().Int64("placement_group", g.ID).Str("name", g.Name).Msg("empty placement group deleted")
	}
}

// errGroupFull is the API's code for a full placement group.
const errGroupFull = hcloud.ErrorCode("placement_group_member_limit_reached")
