package hetzner

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// Spread placement (capability placement.spread).
//
// The provider keeps a pool's spread placement groups itself, per
// location (a group's servers share one location: a spread group spreads
// them over the hosts of one site): each is labelled
// <prefix>/managed=true, <prefix>/pool=<pool id label value> and
// <prefix>/location=<location>, named "<pool id>-<location>-spread-<n>",
// and holds at most MaxServersPerGroup servers (Hetzner's limit). A create picks the pool's group with room
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

// spreadGroups tracks, for every client of a Definition (Serve may build
// two clients of an account at once), the placement group slots
// taken by this replica's creates: in flight (their POST /servers not yet
// answered), or answered with a server that a group list may not show yet.
// A pick counts a group's listed servers plus those slots, each server
// once.
type spreadGroups struct {
	mu       sync.Mutex
	slots    map[int64]map[*slot]bool // group id → its slots
	pickLock map[string]*sync.Mutex
	// answered is closed (and replaced) whenever a slot's POST is answered.
	answered chan struct{}
}

// slot is one create's place in a group: server 0 while in flight.
type slot struct {
	server int64
	at     time.Time
}

// slotMemory is how long a slot of a made server counts when no list of
// the group shows it (a list shows a new server at once, but one deleted
// meanwhile never): then it is dropped.
const slotMemory = time.Minute

// lockPool serialises the picks of one pool in this replica.
func (g *spreadGroups) lockPool(pool string) func() {
	g.mu.Lock()
	if g.pickLock == nil {
		g.pickLock, g.slots = map[string]*sync.Mutex{}, map[int64]map[*slot]bool{}
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

// members is how many servers group grp holds for a pick at now: those
// listed and this replica's slots not among them. Slots the list shows,
// or made servers older than slotMemory, are dropped.
func (g *spreadGroups) members(grp *hcloud.PlacementGroup, now time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(grp.Servers)
	for sl := range g.slots[grp.ID] {
		switch {
		case sl.server == 0:
			n++
		case slices.Contains(grp.Servers, sl.server) || now.Sub(sl.at) > slotMemory:
			delete(g.slots[grp.ID], sl)
		default:
			n++
		}
	}
	return n
}

// inFlight reports whether a create of this replica is filling group id
// (its POST /servers not answered yet), and a channel closed at the next
// answer of any.
func (g *spreadGroups) inFlight(id int64) (bool, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.answered == nil {
		g.answered = make(chan struct{})
	}
	for sl := range g.slots[id] {
		if sl.server == 0 {
			return true, g.answered
		}
	}
	return false, g.answered
}

// unanswered reports whether a create of this replica is filling group id.
func (g *spreadGroups) unanswered(id int64) bool {
	busy, _ := g.inFlight(id)
	return busy
}

// take adds a slot in group id and returns its release: with the server
// the POST made (0: none, the slot goes) and when.
func (g *spreadGroups) take(id int64) func(server int64, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sl := &slot{}
	if g.slots[id] == nil {
		g.slots[id] = map[*slot]bool{}
	}
	g.slots[id][sl] = true
	return func(server int64, at time.Time) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.answered != nil {
			close(g.answered)
			g.answered = nil
		}
		if server == 0 {
			delete(g.slots[id], sl)
			return
		}
		sl.server, sl.at = server, at
	}
}

// groupPrefix starts the names of a pool's spread groups in location.
func groupPrefix(pool, location string) string {
	return strings.ToLower(KeyLabelValue(pool)) + "-" + location + "-spread-"
}

// groupName is the name of a pool's n-th spread group in location.
func groupName(pool, location string, n int) string {
	return groupPrefix(pool, location) + strconv.Itoa(n)
}

// pickGroup returns the pool's spread group with room, creating the next
// one when all are full, and a release to call with the server id (0:
// none) once the POST /servers that uses it has been answered. full lists
// groups the API called full during this create.
//
// A group's count is its listed servers plus this replica's creates into
// it (spreadGroups.members). A create in flight may already be listed, so
// a group that counts full while fewer than MaxServersPerGroup are listed
// is ambiguous: the pick waits for an answer and lists again, so chunks
// are exactly MaxServersPerGroup. Groups fill in id order.
//
// It costs GET /placement_groups?label_selector=<prefix>/managed=true (one
// page: a project has at most 50 groups; again after each wait), a POST
// /placement_groups when no group has room, and a DELETE per empty group
// swept (sweepGroups).
func (c *client) pickGroup(ctx context.Context, s *session, pool, location string,
	full []int64) (*hcloud.PlacementGroup, func(int64), error) {
	groups := c.set.groups
	unlock := groups.lockPool(s.call.Account.ID + "/" + pool + "/" + location)
	defer unlock()
	poolValue := KeyLabelValue(pool)
	raced := false
	for {
		listed, _, err := s.api.PlacementGroup.List(ctx, hcloud.PlacementGroupListOpts{
			ListOpts: hcloud.ListOpts{LabelSelector: c.labels.managedSelector(), PerPage: listPageSize},
			Sort:     []string{"id:asc"},
		})
		if err != nil {
			return nil, nil, err
		}
		slices.SortFunc(listed, func(a, b *hcloud.PlacementGroup) int { return cmp.Compare(a.ID, b.ID) })
		var chosen *hcloud.PlacementGroup
		var wait <-chan struct{}
		next := 1
		for _, g := range listed {
			if g.Labels[c.labels.pool] != poolValue || g.Labels[c.labels.location] != location {
				continue
			}
			next = max(next, groupIndex(g.Name, pool, location)+1)
			if chosen != nil || wait != nil || slices.Contains(full, g.ID) {
				continue
			}
			if groups.members(g, s.call.Clock.Now()) < MaxServersPerGroup {
				chosen = g
			} else if busy, answered := groups.inFlight(g.ID); busy && len(g.Servers) < MaxServersPerGroup {
				wait = answered
			}
		}
		if wait != nil {
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		c.sweepGroups(ctx, s, listed, chosen)
		if chosen == nil {
			res, _, err := s.api.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{
				Name: groupName(pool, location, next), Type: hcloud.PlacementGroupTypeSpread,
				Labels: map[string]string{c.labels.managed: "true", c.labels.pool: poolValue, c.labels.location: location},
			})
			if hcloud.IsError(err, hcloud.ErrorCodeUniquenessError) && !raced {
				raced = true // another replica made that group just now: list again
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			chosen = res.PlacementGroup
		}
		release := groups.take(chosen.ID)
		return chosen, func(server int64) { release(server, s.call.Clock.Now()) }, nil
	}
}

// groupIndex is n of a group named groupName(pool, location, n), 0 for
// another name.
func groupIndex(name, pool, location string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, groupPrefix(pool, location)))
	if err != nil || !strings.HasPrefix(name, groupPrefix(pool, location)) {
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
		if len(g.Servers) > 0 || (keep != nil && g.ID == keep.ID) || c.set.groups.unanswered(g.ID) ||
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
