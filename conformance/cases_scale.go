package conformance

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"better-compute.io/compute/pkg/provider"
)

// Load of scale.latency: workers per kind of call (all kinds run at
// once), and the page size of list calls. Calls of each kind grow with
// the inventory: gets a tenth of it, creates and list pages a hundredth
// (1000, 100 and 100 for DefaultScaleMachines), at least minLoadCalls.
const (
	loadWorkers  = 8
	loadPageSize = 100
	minLoadCalls = 10
)

func scaleListComplete(c *check) {
	seeded := c.ensureSeeded(c.r.s.ScaleMachines)
	start := time.Now()
	counts, l := c.listIDs(provider.MaxListLimit)
	c.Metric("listAllMs", float64(time.Since(start).Milliseconds()))
	c.Metric("machines", float64(len(l.items)))
	c.Metric("pages", float64(l.pages))
	c.Metric("maxReplyBytes", float64(l.maxBytes))
	expectListed(c, seeded, counts)
	c.Logf("listed %d machines in %d pages", len(l.items), l.pages)
}

// latencies collects call durations of one kind, safe for concurrent use.
type latencies struct {
	mu     sync.Mutex
	d      []time.Duration
	errors int
	first  error
}

// time runs f and records its duration, or its error.
func (l *latencies) time(f func() error) {
	start := time.Now()
	err := f()
	d := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if l.errors++; l.first == nil {
			l.first = err
		}
		return
	}
	l.d = append(l.d, d)
}

// percentile is the q-th percentile (0 < q <= 1) of ds, nearest rank.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
}

// report records the figures of one kind of call and fails on errors.
func (l *latencies) report(c *check, kind string) {
	n := len(l.d) + l.errors
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	p50, p99, worst := percentile(l.d, 0.5), percentile(l.d, 0.99), percentile(l.d, 1)
	c.Metric(kind+".calls", float64(n))
	c.Metric(kind+".p50Ms", ms(p50))
	c.Metric(kind+".p99Ms", ms(p99))
	c.Metric(kind+".maxMs", ms(worst))
	c.Logf("%-10s p50 %8.2f ms  p99 %8.2f ms  max %8.2f ms  (%d calls, %d workers)", kind, ms(p50), ms(p99), ms(worst), n, loadWorkers)
	if l.errors > 0 {
		c.Errorf("%d of %d %s calls under load failed, first: %v", l.errors, n, kind, l.first)
	}
}

// load runs n calls of f on loadWorkers goroutines.
func load(n int, f func(i int)) *sync.WaitGroup {
	var wg sync.WaitGroup
	next := make(chan int)
	for range loadWorkers {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
	}()
	return &wg
}

func scaleLatency(c *check) {
	n := c.r.s.ScaleMachines
	seeded := c.ensureSeeded(n)
	loadGets, loadCreates, loadLists := max(n/10, minLoadCalls), max(n/100, minLoadCalls), max(n/100, minLoadCalls)
	var gets, creates, lists latencies
	var mu sync.Mutex
	var made []string
	c.Cleanup(func() { c.deleteAll(made) })
	picks := make([]string, loadGets)
	for i := range picks {
		picks[i] = seeded[c.r.intn(len(seeded))]
	}
	waits := []*sync.WaitGroup{
		load(loadGets, func(i int) {
			gets.time(func() error {
				m, err := c.get(picks[i])
				if err == nil && (m == nil || m.ID != picks[i]) {
					err = fmt.Errorf("get %s answered %+v", picks[i], m)
				}
				return err
			})
		}),
		load(loadCreates, func(int) {
			name := c.name("load")
			creates.time(func() error {
				ctx, cancel := c.callCtx()
				defer cancel()
				m, err := c.remote().Create(ctx, c.acct(), name, c.spec(name))
				if err == nil {
					mu.Lock()
					made = append(made, m.ID)
					mu.Unlock()
				}
				return err
			})
		}),
	}
	if c.r.claims(provider.CapabilityList) {
		cursors := make(chan string, loadWorkers)
		for range loadWorkers {
			cursors <- ""
		}
		waits = append(waits, load(loadLists, func(int) {
			cursor := <-cursors
			lists.time(func() error {
				p, err := c.listPage(cursor, loadPageSize)
				cursor = p.next
				return err
			})
			cursors <- cursor
		}))
	}
	for _, wg := range waits {
		wg.Wait()
	}
	gets.report(c, "get")
	creates.report(c, "create")
	if c.r.claims(provider.CapabilityList) {
		lists.report(c, "list")
	}
}

// deleteAll removes machines on loadWorkers goroutines.
func (c *check) deleteAll(ids []string) {
	load(len(ids), func(i int) {
		if err := c.r.removeMachine(context.Background(), ids[i]); err != nil {
			c.Logf("cleanup of machine %s: %v", ids[i], err)
		}
	}).Wait()
}
