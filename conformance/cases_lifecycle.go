package conformance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// concurrentCreates is how many creates race for one key.
const concurrentCreates = 8

// checkMachine records what is malformed in a machine a call answered.
func (c *check) checkMachine(what string, m *api.ExternalMachine) {
	switch {
	case m == nil:
		c.Errorf("%s answered no machine", what)
	case m.ID == "":
		c.Errorf("%s answered a machine without an id", what)
	case !slices.Contains(api.MachineStates(), m.State):
		c.Errorf("%s answered machine %s in state %q, not one of %v", what, m.ID, m.State, api.MachineStates())
	}
}

// claimedButUnsupported stops the behaviour when a claimed capability's
// verb answered UNSUPPORTED.
func (c *check) claimedButUnsupported(capability string, err error) {
	if api.IsCode(err, api.CodeUnsupported) {
		c.Fatalf("the provider claims %s but answered UNSUPPORTED: %v", capability, err)
	}
}

// runningMachine creates the check's machine ("m") and waits until it runs.
func (c *check) runningMachine() *api.ExternalMachine {
	m := c.mustCreate(c.name("m"))
	return c.waitState(m.ID, api.StateRunning)
}

func lifeRetrySameKey(c *check) {
	name := c.name("m")
	first := c.mustCreate(name)
	c.checkMachine("create", first)
	for i := range 2 {
		again, err := c.create(name)
		if err != nil {
			c.Fatalf("retry %d of create %s: %v", i+1, name, err)
		}
		if again.ID != first.ID {
			c.Errorf("retry %d of create %s named machine %s, the first create %s", i+1, name, again.ID, first.ID)
		}
	}
	c.expectOne(first.Name)
}

func lifeConcurrentSameKey(c *check) {
	name := c.name("m")
	ids := make([]string, concurrentCreates)
	errs := make([]error, concurrentCreates)
	var wg sync.WaitGroup
	for i := range concurrentCreates {
		wg.Go(func() {
			for attempt := 0; attempt < 3; attempt++ {
				var m *api.ExternalMachine
				if m, errs[i] = c.create(name); errs[i] == nil {
					ids[i] = m.ID
					return
				}
				if !retryable(errs[i]) {
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			c.Fatalf("concurrent create %d of %s: %v", i, name, err)
		}
	}
	for i, id := range ids {
		if id != ids[0] {
			c.Errorf("concurrent creates of one key named machines %s and %s (call %d)", ids[0], id, i)
		}
	}
	m, err := c.get(ids[0])
	if err != nil || m == nil {
		c.Fatalf("get %s after the concurrent creates: %v, %v", ids[0], m, err)
	}
	c.expectOne(m.Name)
}

func lifeDistinctKeys(c *check) {
	a := c.mustCreate(c.name("a"))
	b := c.mustCreate(c.name("b"))
	if a.ID == b.ID {
		c.Errorf("two creates with distinct keys both named machine %s", a.ID)
	}
}

func lifeFollowsToRunning(c *check) {
	start := time.Now()
	m := c.mustCreate(c.name("m"))
	c.checkMachine("create", m)
	running := c.waitState(m.ID, api.StateRunning)
	c.Metric("runningAfterMs", float64(time.Since(start).Milliseconds()))
	c.checkMachine("get", running)
	if running.ID != m.ID {
		c.Errorf("get %s answered machine %s", m.ID, running.ID)
	}
	if running.OfferID != "" && running.OfferID != c.r.s.OfferID {
		c.Errorf("machine %s has offer %q, created with %q", m.ID, running.OfferID, c.r.s.OfferID)
	}
}

func lifeDeleteRemoves(c *check) {
	m := c.runningMachine()
	start := time.Now()
	if err := c.del(m.ID); err != nil {
		c.Fatalf("delete %s: %v", m.ID, err)
	}
	c.waitAbsent(m.ID)
	c.Metric("goneAfterMs", float64(time.Since(start).Milliseconds()))
}

func lifeDeleteTwice(c *check) {
	m := c.runningMachine()
	if err := c.del(m.ID); err != nil {
		c.Fatalf("delete %s: %v", m.ID, err)
	}
	// The first delete must have finished (get answers absent) before the
	// second is sent: a second delete while the first still runs may meet
	// a busy machine (Hetzner's 423 locked), which proves nothing.
	c.waitAbsent(m.ID)
	c.expectCode("second delete of the deleted machine "+m.ID, c.del(m.ID), api.CodeNotFound)
}

func lifeGetUnknown(c *check) {
	m := c.runningMachine()
	c.deleteGone(m.ID)
	got, err := c.get(m.ID)
	switch {
	case err != nil:
		c.Errorf("get of the unknown id %s answered %v, want absent (machine null)", m.ID, err)
	case got != nil:
		c.Errorf("get of the unknown id %s answered a machine in state %s", m.ID, got.State)
	}
}

func lifePower(c *check) {
	m := c.runningMachine()
	for _, step := range []struct {
		action api.PowerAction
		state  api.MachineState
	}{{api.ActionOff, api.StateStopped}, {api.ActionOn, api.StateRunning}} {
		start := time.Now()
		err := c.power(m.ID, step.action)
		c.claimedButUnsupported(provider.CapabilityPower, err)
		if err != nil {
			c.Fatalf("power %s %s: %v", step.action, m.ID, err)
		}
		if !c.r.s.PowerObservable {
			c.Logf("power is not observable: the state after %s is not checked", step.action)
			continue
		}
		c.waitState(m.ID, step.state)
		c.Metric("power."+string(step.action)+"Ms", float64(time.Since(start).Milliseconds()))
	}
}

func lifeReinstall(c *check) {
	m := c.runningMachine()
	ctx, cancel := c.callCtx()
	got, err := c.remote().Reinstall(ctx, c.acct(), m.ID, c.r.s.Image)
	cancel()
	c.claimedButUnsupported(provider.CapabilityReinstall, err)
	if err != nil {
		c.Fatalf("reinstall %s: %v", m.ID, err)
	}
	c.checkMachine("reinstall", got)
	if got.ID != m.ID {
		c.Errorf("reinstall of %s answered machine %s", m.ID, got.ID)
	}
	c.waitState(m.ID, api.StateRunning)
}

// listIDs lists every page (limit) and fails on a machine listed twice or
// malformed; it returns how often each id was listed, and the walk.
func (c *check) listIDs(limit int) (map[string]int, listing) {
	l := c.listAll(limit)
	counts := map[string]int{}
	for _, m := range l.items {
		c.checkMachine("list", &m)
		if counts[m.ID]++; counts[m.ID] == 2 {
			c.Errorf("list answered machine %s twice", m.ID)
		}
	}
	return counts, l
}

func lifeListIncludesOurs(c *check) {
	var ours []string
	for range 3 {
		ours = append(ours, c.mustCreate(c.name("m")).ID)
	}
	if _, err := c.listPage("", 1); err != nil {
		c.claimedButUnsupported(provider.CapabilityList, err)
	}
	counts, _ := c.listIDs(2)
	for _, id := range ours {
		if counts[id] != 1 {
			c.Errorf("list with limit 2 answered our machine %s %d times, want once", id, counts[id])
		}
	}
}

func lifeListOnlyManaged(c *check) {
	foreign, err := c.r.s.Inventory.Seed(c.ctx, 3, false, c.r.prefix+"-foreign")
	if errors.Is(err, ErrNotSupported) {
		c.Incompletef("the Inventory hook cannot make unmanaged machines")
	}
	if err != nil {
		c.Fatalf("seed unmanaged machines: %v", err)
	}
	c.Cleanup(func() {
		if err := c.r.s.Inventory.Remove(context.Background(), foreign); err != nil {
			c.Logf("remove unmanaged machines: %v", err)
		}
	})
	ours := c.mustCreate(c.name("m"))
	counts, _ := c.listIDs(provider.MaxListLimit)
	for _, id := range foreign {
		if counts[id] > 0 {
			c.Errorf("list answered machine %s, made outside this system", id)
		}
	}
	if counts[ours.ID] != 1 {
		c.Errorf("list answered our machine %s %d times, want once", ours.ID, counts[ours.ID])
	}
}

func lifeUnclaimedUnsupported(c *check) {
	var unclaimed []string
	for _, capability := range provider.CallCapabilities {
		if !c.r.claims(capability) {
			unclaimed = append(unclaimed, capability)
		}
	}
	if len(unclaimed) == 0 {
		c.Logf("the provider claims every capability")
		return
	}
	m := c.mustCreate(c.name("m"))
	for _, capability := range unclaimed {
		var err error
		ctx, cancel := c.callCtx()
		switch capability {
		case provider.CapabilityPower:
			err = c.remote().Power(ctx, c.acct(), m.ID, api.ActionOn)
		case provider.CapabilityReinstall:
			_, err = c.remote().Reinstall(ctx, c.acct(), m.ID, c.r.s.Image)
		case provider.CapabilityList:
			_, err = c.remote().List(ctx, c.acct(), "", 1)
		case provider.CapabilityDeleteByKey:
			err = c.remote().DeleteByKey(ctx, c.acct(), m.IdempotencyKey)
		case provider.CapabilityLabels:
			_, err = c.remote().Relabel(ctx, c.acct(), m.ID, map[string]string{})
		case provider.CapabilityResize:
			_, err = c.remote().Resize(ctx, api.ProviderResizeRequest{Account: c.acct(), ID: m.ID, OfferID: c.r.s.OfferID})
		case provider.CapabilityMetrics:
			now := time.Now().UTC()
			_, err = c.remote().Metrics(ctx, c.acct(), m.ID, api.MetricsWindow{Type: api.MetricsCPU, From: now.Add(-time.Hour), To: now})
		}
		cancel()
		c.expectCode(capability+" (not claimed)", err, api.CodeUnsupported)
	}
}

func lifeDriftRemoved(c *check) {
	m := c.runningMachine()
	if err := c.r.s.Inventory.Remove(c.ctx, []string{m.ID}); err != nil {
		c.Fatalf("remove %s out of band: %v", m.ID, err)
	}
	c.r.markGone(m.ID)
	c.waitAbsent(m.ID)
	c.expectCode("delete of the machine removed out of band", c.del(m.ID), api.CodeNotFound)
}

// lifeKeyReported: machines report their key, so a caller whose machine id
// was handed to another machine (a reused Proxmox VMID) can tell.
func lifeKeyReported(c *check) {
	name := c.name("m")
	m := c.mustCreate(name)
	if m.IdempotencyKey != name {
		c.Errorf("create with key %s answered idempotencyKey %q", name, m.IdempotencyKey)
	}
	getExpecting := func(key string) *api.ExternalMachine {
		ctx, cancel := c.callCtx()
		defer cancel()
		keyed := c.remote()
		keyed.IdempotencyKey = key
		got, err := keyed.Get(ctx, c.acct(), m.ID)
		if err != nil {
			c.Fatalf("get %s expecting key %s: %v", m.ID, key, err)
		}
		return got
	}
	if got := getExpecting(name); got == nil || got.IdempotencyKey != name {
		c.Errorf("get %s expecting its own key %s answered %+v, want the machine with that key", m.ID, name, got)
	}
	if got := getExpecting(name + "-other"); got != nil {
		c.Errorf("get %s expecting another key answered the machine (idempotencyKey %q), want absent", m.ID, got.IdempotencyKey)
	}
}

// lifeDeleteByKey: delete with the idempotency key and no id (a caller
// whose create's outcome is unknown) deletes the machine created with that
// key; once it is gone, and for a key no machine carries, it answers
// NOT_FOUND. Retryable answers (a machine still locked by its create) are
// asked again; a success means the deletes are requested, so it is asked
// again until NOT_FOUND.
func lifeDeleteByKey(c *check) {
	name := c.name("m")
	m := c.mustCreate(name)
	c.deleteByKeyUntil(name, "to be accepted", func(err error) bool { return err == nil })
	c.r.markGone(m.ID)
	c.waitAbsent(m.ID)
	c.deleteByKeyUntil(name, "to answer NOT_FOUND", func(err error) bool { return api.IsCode(err, api.CodeNotFound) })
	c.expectCode("delete by a key no machine carries", c.deleteByKey(c.name("unknown")), api.CodeNotFound)
}

// deleteByKey sends one delete by idempotency key.
func (c *check) deleteByKey(key string) error {
	ctx, cancel := c.callCtx()
	defer cancel()
	return c.remote().DeleteByKey(ctx, c.acct(), key)
}

// deleteByKeyUntil repeats the delete by key until its answer is done,
// failing on an answer that is neither that, success nor retryable.
func (c *check) deleteByKeyUntil(key, what string, done func(error) bool) {
	err := c.eventually("delete by key "+key+" "+what, func(context.Context) (bool, error) {
		err := c.deleteByKey(key)
		switch {
		case done(err):
			return true, nil
		case err != nil && !retryable(err):
			c.Fatalf("delete by key %s while waiting for it %s: %v", key, what, err)
		}
		return false, err
	})
	if err != nil {
		c.Fatalf("%v", err)
	}
}
