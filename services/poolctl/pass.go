package poolctl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"sync"
	"time"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// errLeaseLost ends a pass whose lease another controller took, or that
// ran out: it must not act on what it saw any more.
var errLeaseLost = errors.New("the pool's lease was lost")

// createWorkers bounds the instance API calls one pass sends at once.
const createWorkers = 16

// refusedAgain is how soon a pool whose creates were refused is looked at
// again (a bad template is not fixed in two seconds).
const refusedAgain = 10 * time.Second

// CreateKey is the idempotency key of the create of slot ordinal of pool.
func CreateKey(poolID string, ordinal int64) string {
	return "poolctl/" + poolID + "/" + strconv.FormatInt(ordinal, 10)
}

// pass acts once on pool id of tenant: take the lease, list the pool's
// instances, send the creates that never answered, plan, record the plan,
// act on it, record the outcome and the status. It returns when to look
// again (0: at the next change, event or resync).
func (c *Controller) pass(ctx context.Context, tenant, id string) (time.Duration, error) {
	pool, _, err := c.pools.Get(ctx, tenant, id)
	if api.IsCode(err, api.CodeNotFound) {
		return 0, c.forget(ctx, tenant, id)
	}
	if err != nil || pool.Sizes == nil || pool.DeletionRequestedAt != nil {
		return 0, err
	}
	rec, rev, _, err := c.control.GetOrCreate(ctx, tenant, id, api.PoolControl{})
	if err != nil {
		return 0, err
	}
	if rec.Holder != c.o.ID && rec.LeaseExpiresAt.After(time.Now()) {
		return time.Until(rec.LeaseExpiresAt) + 100*time.Millisecond, nil // another controller acts
	}
	if rec, rev, err = c.write(ctx, tenant, id, rec, rev, true, func(*api.PoolControl) error { return nil }); err != nil {
		return 0, err
	}
	actCtx, cancel := context.WithDeadline(ctx, rec.LeaseExpiresAt.Add(-c.o.LeaseDuration/5))
	defer cancel()
	cl := client.New(c.nc, tenant, c.o.CallTimeout)
	list, err := cl.Instances.All(actCtx, api.InstanceListRequest{PoolID: id})
	if err != nil {
		return 0, err
	}
	insts := make(map[string]api.Instance, len(list))
	for _, inst := range list {
		insts[inst.ID] = inst
	}
	// A list is not the authority on one instance: a slot whose instance
	// it lacks is asked for by id before settle may call it gone (a slot
	// dropped while its instance lives would leave that instance orphaned).
	for _, sl := range rec.Slots {
		if _, ok := insts[sl.InstanceID]; ok || sl.InstanceID == "" {
			continue
		}
		inst, err := cl.Instances.Get(actCtx, sl.InstanceID)
		switch {
		case err == nil:
			insts[inst.ID] = inst
		case !api.IsCode(err, api.CodeNotFound):
			return 0, err
		}
	}
	s := &passState{c: c, cl: cl, pool: &pool, insts: insts, listed: map[int64]string{}}
	for _, sl := range rec.Slots {
		if sl.InstanceID != "" {
			s.listed[sl.Ordinal] = sl.InstanceID
		}
	}

	// 1. Creates that never answered (this controller's, or one that died),
	// also of slots to delete since: their instance may exist, and only
	// its id lets it be deleted.
	var pending []api.PoolSlot
	for _, sl := range rec.Slots {
		if sl.InstanceID == "" {
			pending = append(pending, sl)
		}
	}
	s.createAll(actCtx, pending)
	// 2. Record them, forget the slots whose instance is gone, plan and
	// record the plan: new slots, deletes.
	var p plan
	rec, rev, err = c.write(ctx, tenant, id, rec, rev, false, func(r *api.PoolControl) error {
		r.Slots = s.settle(r.Slots)
		p = makePlan(pool.Sizes, flavorNames(&pool), pool.Revision, pool.RolloutOrDefault(), s.members(r.Slots))
		s.allocate(r, p)
		return nil
	})
	if err != nil {
		return 0, err
	}
	// 3. Act: deletes first (a replaced Failed instance's machine goes
	// before its successor's comes), then creates.
	s.deleteAll(actCtx, rec.Slots)
	s.createAll(actCtx, s.fresh)
	rec, _, err = c.write(ctx, tenant, id, rec, rev, false, func(r *api.PoolControl) error {
		r.Slots = s.settle(r.Slots)
		r.Status = keepTransitions(r.Status, status(&pool, r.Slots, insts, s.problem))
		return nil
	})
	if err != nil {
		return 0, err
	}
	c.remember(tenant, id, rec.Slots)
	switch {
	case s.refused:
		return refusedAgain, nil
	case rec.Status.Rollout != api.RolloutComplete || len(p.deletes) > 0 || len(p.creates) > 0:
		return c.o.RecheckInterval, nil
	}
	return 0, nil
}

// write is a CAS write of the pool's record (the table's loop) that holds
// the lease: take takes it when it is free or expired; otherwise this
// controller must still hold it, unexpired (errLeaseLost). Every write
// extends the lease by LeaseDuration.
func (c *Controller) write(ctx context.Context, tenant, id string, cur api.PoolControl, rev uint64, take bool,
	change func(*api.PoolControl) error) (api.PoolControl, uint64, error) {
	return c.control.MutateAt(ctx, tenant, id, cur, rev, func(r *api.PoolControl) error {
		now := time.Now()
		mine := r.Holder == c.o.ID && r.LeaseExpiresAt.After(now)
		free := r.Holder == "" || !r.LeaseExpiresAt.After(now)
		if !mine && !(take && free) {
			return errLeaseLost
		}
		r.Slots = append([]api.PoolSlot(nil), r.Slots...)
		r.Holder, r.LeaseExpiresAt = c.o.ID, now.Add(c.o.LeaseDuration)
		return change(r)
	})
}

// forget removes the record of a pool that is gone (its instances are
// gone too: a pool with instances is not deleted).
func (c *Controller) forget(ctx context.Context, tenant, id string) error {
	err := c.control.Remove(ctx, tenant, id)
	if api.IsCode(err, api.CodeNotFound) {
		err = nil
	}
	c.remember(tenant, id, nil)
	return err
}

// remember maps the instances of slots to pool key, for onEvent.
func (c *Controller) remember(tenant, id string, slots []api.PoolSlot) {
	key := bus.RecordKey(tenant, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	for inst, k := range c.members {
		if k == key {
			delete(c.members, inst)
		}
	}
	for _, s := range slots {
		if s.InstanceID != "" {
			c.members[s.InstanceID] = key
		}
	}
}

// passState is what one pass learns. Fields set by createAll and
// deleteAll are guarded by mu.
type passState struct {
	c     *Controller
	cl    *client.Client
	pool  *api.Pool
	insts map[string]api.Instance // the pool's instances when the pass listed them
	// listed are the instance ids the record held, by slot, before the
	// pass listed: only such a slot whose instance the list lacks is gone.
	// An id recorded since (by a pass that ran meanwhile) may name an
	// instance made after the list.
	listed map[int64]string

	// fresh are the slots allocate made (their creates are sent in step 3).
	fresh []api.PoolSlot

	mu sync.Mutex
	// made maps the ordinals whose create answered to their instance id.
	made map[int64]string
	// dropped are ordinals whose create was refused: nothing was made.
	dropped map[int64]bool
	// refused is set when a create was refused; problem says the last
	// failure of an instance call, for the status message.
	refused bool
	problem string
}

// members are the slots a plan counts: not being deleted, with the phase
// of their instance.
func (s *passState) members(slots []api.PoolSlot) []member {
	var ms []member
	for _, sl := range slots {
		if sl.DeleteRequested {
			continue
		}
		ms = append(ms, member{slot: sl, phase: s.insts[sl.InstanceID].Status.Phase})
	}
	return ms
}

// settle applies what the pass learnt to slots: ids of answered creates,
// dropped refusals, and slots whose instance the list no longer has (gone,
// deleted by the pool or by someone else) although the record named it
// before the list was taken: a slot another pass filled meanwhile is kept.
func (s *passState) settle(slots []api.PoolSlot) []api.PoolSlot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slots[:0:0]
	for _, sl := range slots {
		if id, ok := s.made[sl.Ordinal]; ok && sl.InstanceID == "" {
			sl.InstanceID = id
			if _, listed := s.insts[id]; !listed {
				s.insts[id] = api.Instance{ID: id, Status: api.InstanceStatus{Phase: api.PhasePending}}
			}
		}
		if s.dropped[sl.Ordinal] {
			continue // refused: nothing was made
		}
		inst, listed := s.insts[sl.InstanceID]
		if sl.InstanceID != "" && !listed && s.listed[sl.Ordinal] == sl.InstanceID {
			continue // gone
		}
		if listed && inst.DeletionRequestedAt != nil {
			sl.DeleteRequested = true // deleted by someone else: going, replaced
		}
		out = append(out, sl)
	}
	return out
}

// allocate adds p's creates to r as new slots (fresh) and marks p's
// deletes.
func (s *passState) allocate(r *api.PoolControl, p plan) {
	now := time.Now().UTC()
	for i := range r.Slots {
		for _, o := range p.deletes {
			if r.Slots[i].Ordinal == o {
				r.Slots[i].DeleteRequested = true
			}
		}
	}
	s.fresh = nil
	tmpl, _ := templateOf(s.pool, s.pool.Revision)
	for _, f := range flavorNames(s.pool) {
		for range p.creates[f] {
			image := tmpl.Image
			if image == "" {
				fl, _ := s.pool.Flavor(f)
				image = fl.Image
			}
			sl := api.PoolSlot{Ordinal: r.NextOrdinal, Flavor: f, Revision: s.pool.Revision, Image: image, CreatedAt: now}
			r.NextOrdinal++
			r.Slots = append(r.Slots, sl)
			s.fresh = append(s.fresh, sl)
		}
	}
}

// createAll sends the create of every slot (at most createWorkers at once)
// and records each outcome: the instance id, a refusal (nothing made: the
// slot is dropped), or a failure (the slot waits for the next pass).
func (s *passState) createAll(ctx context.Context, slots []api.PoolSlot) {
	s.each(len(slots), func(i int) {
		sl := slots[i]
		if h := s.c.o.Hooks.BeforeCreate; h != nil {
			h(s.pool.ID, sl.Ordinal)
		}
		req, ok := createRequest(s.pool, sl)
		var inst api.Instance
		err := fmt.Errorf("revision %d of pool %s is no longer kept", sl.Revision, s.pool.ID)
		if ok {
			inst, err = s.cl.Instances.Create(ctx, req)
		}
		s.c.actions.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.made == nil {
			s.made, s.dropped = map[int64]string{}, map[int64]bool{}
		}
		switch {
		case err == nil:
			s.made[sl.Ordinal] = inst.ID
			s.c.log.Info().Str("pool", s.pool.ID).Int64("slot", sl.Ordinal).Str("instance", inst.ID).
				Int64("revision", sl.Revision).Msg("pool instance created")
		case refusal(err) || !ok:
			s.dropped[sl.Ordinal], s.refused = true, true
			s.problem = fmt.Sprintf("create of slot %d refused: %v", sl.Ordinal, err)
			s.c.log.Warn().Str("pool", s.pool.ID).Int64("slot", sl.Ordinal).Err(err).Msg("pool instance create refused")
		default:
			s.problem = fmt.Sprintf("create of slot %d failed: %v", sl.Ordinal, err)
		}
	})
}

// deleteAll asks for the delete of every slot marked for it whose instance
// is not being deleted yet.
func (s *passState) deleteAll(ctx context.Context, slots []api.PoolSlot) {
	var ids []string
	for _, sl := range slots {
		if inst, ok := s.insts[sl.InstanceID]; sl.DeleteRequested && ok && inst.DeletionRequestedAt == nil {
			ids = append(ids, sl.InstanceID)
		}
	}
	s.each(len(ids), func(i int) {
		_, err := s.cl.Instances.Delete(ctx, ids[i])
		s.c.actions.Add(1)
		if err != nil && !api.IsCode(err, api.CodeNotFound) {
			s.mu.Lock()
			s.problem = fmt.Sprintf("delete of instance %s failed: %v", ids[i], err)
			s.mu.Unlock()
			return
		}
		s.c.log.Info().Str("pool", s.pool.ID).Str("instance", ids[i]).Msg("pool instance deleted")
	})
}

// each runs fn(0..n-1), createWorkers at once, and waits.
func (s *passState) each(n int, fn func(i int)) {
	sem := make(chan struct{}, createWorkers)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// refusal reports whether a create's error proves that no instance of the
// key exists to be found by a retry: INVALID_INPUT (checked before the key
// is claimed), ALREADY_EXISTS (the name is taken: the key was claimed, no
// instance written), INVALID_STATE (the pool is being deleted, or the
// key's instance was deleted since) and CONFLICT naming idempotencyKey (the
// key is another request's: never, as the request of a slot is always the
// same). Any other failure (UNAVAILABLE, a CONFLICT of the store) may have
// made the instance: the slot waits for the next pass.
func refusal(err error) bool {
	return api.IsCode(err, api.CodeInvalidInput) || api.IsCode(err, api.CodeAlreadyExists) ||
		api.IsCode(err, api.CodeInvalidState) ||
		(api.IsCode(err, api.CodeConflict) && api.AsComputeError(err).Path() == "idempotencyKey")
}

// templateOf is the template of p's revision rev: the empty template for
// revision 0 (a pool sized before it had a revision).
func templateOf(p *api.Pool, rev int64) (api.PoolTemplate, bool) {
	if rev == 0 {
		return api.PoolTemplate{}, true
	}
	return p.RevisionTemplate(rev)
}

// instanceName is the pattern of instance names (a hostname label).
var instanceName = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9.-]{0,61}[a-zA-Z0-9])?$`)

// createRequest is the create of slot s of pool p, the same whenever it is
// sent (and false when p no longer keeps the slot's revision): the slot's
// flavor and image, its revision's template, the pool labels, the name
// <pool name>-<ordinal> (the instance id when that is no hostname label)
// and the key CreateKey.
func createRequest(p *api.Pool, s api.PoolSlot) (api.InstanceCreateRequest, bool) {
	t, ok := templateOf(p, s.Revision)
	if !ok {
		return api.InstanceCreateRequest{}, false
	}
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[api.LabelPoolID] = p.ID
	labels[api.LabelPoolRevision] = strconv.FormatInt(s.Revision, 10)
	labels[api.LabelPoolSlot] = strconv.FormatInt(s.Ordinal, 10)
	name := p.Name + "-" + strconv.FormatInt(s.Ordinal, 10)
	if p.Name == "" || !instanceName.MatchString(name) {
		name = ""
	}
	return api.InstanceCreateRequest{PoolID: p.ID, Flavor: s.Flavor, Image: s.Image, Name: name, UserData: t.UserData,
		SSHKeys: t.SSHKeys, Labels: labels, IdempotencyKey: CreateKey(p.ID, s.Ordinal)}, true
}

func flavorNames(p *api.Pool) []string {
	names := make([]string, len(p.Flavors))
	for i, f := range p.Flavors {
		names[i] = f.Name
	}
	return names
}
