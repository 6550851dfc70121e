package composetest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// fleet is a set of instances created under load. A create is acknowledged
// when its reply arrives; until then it is retried with the same
// idempotency key, so a create the stack committed without answering never
// makes a second instance.
type fleet struct {
	c      *client
	w      *world
	prefix string

	stop    chan struct{}
	wg      sync.WaitGroup
	started time.Time
	count   atomic.Int64

	mu     sync.Mutex
	acked  map[string]string // instance id → name
	errors []string          // answers that were neither right nor UNAVAILABLE
}

// startCreates creates n instances named <prefix>-NNN with workers
// concurrent creators, each pausing pace between creates, until all are
// acknowledged or Stop is called.
func (c *client) startCreates(w *world, prefix string, n, workers int, pace time.Duration) *fleet {
	f := &fleet{c: c, w: w, prefix: prefix, stop: make(chan struct{}), started: time.Now(), acked: map[string]string{}}
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	deadline := time.Now().Add(10 * time.Minute)
	for range workers {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for i := range next {
				select {
				case <-f.stop:
					return
				default:
				}
				f.create(fmt.Sprintf("%s-%03d", prefix, i), deadline)
				time.Sleep(pace)
			}
		}()
	}
	return f
}

// create makes one instance, retrying UNAVAILABLE, and checks the answer.
func (f *fleet) create(name string, deadline time.Time) {
	var inst api.Instance
	req := api.InstanceCreateRequest{PoolID: f.w.pool.ID, Flavor: flavorName, Name: name, IdempotencyKey: f.w.tenant + "/" + name}
	err := f.c.retry(deadline, f.w.tenant, bus.ResourceInstances, "create", req, &inst)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
		f.errors = append(f.errors, fmt.Sprintf("create %s: %v", name, err))
	case !api.ValidID(api.PrefixInstance, inst.ID) || inst.Name != name || inst.TenantID != f.w.tenant || inst.PoolID != f.w.pool.ID:
		f.errors = append(f.errors, fmt.Sprintf("create %s answered %s %q of tenant %s, pool %s", name, inst.ID, inst.Name, inst.TenantID, inst.PoolID))
	default:
		f.acked[inst.ID] = name
		f.count.Add(1)
	}
}

// Acked is how many creates were acknowledged so far.
func (f *fleet) Acked() int { return int(f.count.Load()) }

// Stop ends the creates after those in progress, and waits for them.
func (f *fleet) Stop() {
	close(f.stop)
	f.wg.Wait()
}

// Wait waits until every create was acknowledged (or failed).
func (f *fleet) Wait() { f.wg.Wait() }

// ackedSnapshot copies the acknowledged instances.
func (f *fleet) ackedSnapshot() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]string, len(f.acked))
	for id, name := range f.acked {
		out[id] = name
	}
	return out
}

// wrongAnswers lists the answers that were neither right nor UNAVAILABLE.
func (f *fleet) wrongAnswers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errors...)
}

// listAll reads every instance of the tenant (retrying UNAVAILABLE).
func (c *client) listAll(tenant string, deadline time.Time) ([]api.Instance, error) {
	var all []api.Instance
	cursor := ""
	for {
		var page api.List[api.Instance]
		req := api.InstanceListRequest{ListRequest: api.ListRequest{Limit: bus.MaxPageSize, Cursor: cursor}}
		if err := c.retry(deadline, tenant, bus.ResourceInstances, "list", req, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

// waitConverged polls the tenant's instances until every acknowledged one
// runs, and checks that the store holds exactly the acknowledged instances
// with their names (no acknowledged write lost, none made twice). It
// returns the time from the first create to convergence.
func (f *fleet) waitConverged(s *stack, timeout time.Duration) time.Duration {
	s.t.Helper()
	acked := f.ackedSnapshot()
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		all, err := f.c.listAll(f.w.tenant, deadline)
		if err != nil {
			s.t.Fatalf("list %s: %v", f.w.tenant, err)
		}
		running, phases := 0, map[api.Phase]int{}
		for _, inst := range all {
			name, ok := acked[inst.ID]
			if !ok || inst.Name != name {
				s.t.Fatalf("tenant %s holds instance %s %q that no acknowledged create made", f.w.tenant, inst.ID, inst.Name)
			}
			if inst.Status.Phase == api.PhaseFailed {
				s.t.Fatalf("instance %s failed: %+v", inst.ID, inst.Status.Conditions)
			}
			phases[inst.Status.Phase]++
			if inst.Status.Phase == api.PhaseRunning && inst.Status.Machine != nil && inst.Status.Machine.State == api.StateRunning {
				running++
			}
		}
		if len(all) != len(acked) {
			s.t.Fatalf("tenant %s holds %d instances, %d creates were acknowledged: an acknowledged write was lost", f.w.tenant, len(all), len(acked))
		}
		if running == len(acked) {
			return time.Since(f.started)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("tenant %s: %d of %d instances running after %s (phases %v)", f.w.tenant, running, len(acked), timeout, phases)
		}
		if time.Since(lastLog) > 15*time.Second {
			s.logf("  %s: %d/%d running %v", f.w.tenant, running, len(acked), phases)
			lastLog = time.Now()
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// verifyServers checks that the Hetzner emulator holds exactly one running
// server per acknowledged instance of the fleet, named after it, and no
// other server with the fleet's name prefix.
func (f *fleet) verifyServers(s *stack) {
	s.t.Helper()
	acked := f.ackedSnapshot()
	byInstance := map[string][]serverSnapshot{}
	for _, srv := range emulatorServers(s.t) {
		if strings.HasPrefix(srv.Name, f.prefix+"-") {
			byInstance[srv.Labels[idempotencyLabel]] = append(byInstance[srv.Labels[idempotencyLabel]], srv)
		}
	}
	var bad []string
	for id, name := range acked {
		srvs := byInstance[id]
		switch {
		case len(srvs) != 1:
			bad = append(bad, fmt.Sprintf("%s %s has %d servers", id, name, len(srvs)))
		case srvs[0].Name != name || srvs[0].Status != "running":
			bad = append(bad, fmt.Sprintf("%s %s has server %q in state %s", id, name, srvs[0].Name, srvs[0].Status))
		}
		delete(byInstance, id)
	}
	for id, srvs := range byInstance {
		bad = append(bad, fmt.Sprintf("%d servers of prefix %s belong to no acknowledged instance (%q)", len(srvs), f.prefix, id))
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		s.t.Fatalf("emulator servers of %s: %d problems, first: %v", f.prefix, len(bad), bad[:min(len(bad), 10)])
	}
}

// checkAnswers fails the test for every wrong answer the fleet got.
func (f *fleet) checkAnswers(s *stack) {
	s.t.Helper()
	for _, e := range f.wrongAnswers() {
		s.t.Errorf("%s: wrong answer: %s", f.w.tenant, e)
	}
	if n := len(f.ackedSnapshot()); n != f.Acked() {
		s.t.Errorf("%s: %d creates acknowledged, but only %d distinct instances", f.w.tenant, f.Acked(), n)
	}
}
