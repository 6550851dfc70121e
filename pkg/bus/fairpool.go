package bus

import "sync"

// fairPool runs a service's requests on at most workers goroutines,
// tenant-fair: each tenant's requests wait in a queue of their own, and a
// worker that comes free takes the next request of the tenants in turn
// (round robin over the tenants with requests waiting), so another
// tenant's request takes the next free worker instead of waiting behind
// one tenant's flood. A tenant holds at most maxShare workers at once
// (workers less an eighth): a flood of one tenant never holds every
// worker, the rest stay free for the others. The tenant "" (internal
// subjects) is one tenant like the others. Submitting waits while
// maxQueued requests are queued (back-pressure onto the subscriptions, as
// the workers' bound did before). Workers are goroutines that live while
// there are requests to run.
type fairPool struct {
	mu        sync.Mutex
	space     *sync.Cond // signalled when a queued request starts
	workers   int
	maxShare  int
	maxQueued int
	running   int
	queued    int
	holding   map[string]int      // workers held, per tenant
	queues    map[string][]func() // requests waiting, per tenant
	order     []string            // tenants with requests waiting, next first
}

// fairQueueFactor is how many requests per worker a service queues
// before its subscriptions wait.
const fairQueueFactor = 16

func newFairPool(workers int) *fairPool {
	p := &fairPool{workers: workers, maxShare: max(workers-workers/8, 1), maxQueued: workers * fairQueueFactor,
		holding: map[string]int{}, queues: map[string][]func(){}}
	p.space = sync.NewCond(&p.mu)
	return p
}

// submit queues job as a request of tenant and starts a worker for it if
// one may run; it waits while the queue is full.
func (p *fairPool) submit(tenant string, job func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.queued >= p.maxQueued {
		p.space.Wait()
	}
	if len(p.queues[tenant]) == 0 {
		p.order = append(p.order, tenant)
	}
	p.queues[tenant] = append(p.queues[tenant], job)
	p.queued++
	for p.running < p.workers {
		tenant, job, ok := p.next()
		if !ok {
			return
		}
		p.running++
		go p.work(tenant, job)
	}
}

// next takes the next request to run: the first tenant in turn holding
// fewer than maxShare workers gives its oldest, and goes to the back of
// the turn if it has more (p.mu held). It counts the worker as the
// tenant's.
func (p *fairPool) next() (string, func(), bool) {
	for i, tenant := range p.order {
		if p.holding[tenant] >= p.maxShare {
			continue
		}
		q := p.queues[tenant]
		job := q[0]
		q[0] = nil
		p.order = append(p.order[:i], p.order[i+1:]...)
		if q = q[1:]; len(q) > 0 {
			p.queues[tenant] = q
			p.order = append(p.order, tenant)
		} else {
			delete(p.queues, tenant)
		}
		p.queued--
		p.holding[tenant]++
		p.space.Signal()
		return tenant, job, true
	}
	return "", nil, false
}

// work runs job, then the next requests in turn until none may run.
func (p *fairPool) work(tenant string, job func()) {
	for {
		job()
		p.mu.Lock()
		if p.holding[tenant]--; p.holding[tenant] <= 0 {
			delete(p.holding, tenant)
		}
		var ok bool
		tenant, job, ok = p.next()
		if !ok {
			p.running--
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}
