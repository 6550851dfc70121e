package emulator

import (
	"maps"
	"sync"
)

// callCounter counts API calls per route key.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

// add counts one call of route.
func (c *callCounter) add(route string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[route]++
}

// reset forgets all counts.
func (c *callCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}

// Calls returns how many API calls matched route (a Route* constant such as
// RouteClone), whatever their outcome. Control API calls are not counted.
func (e *Emulator) Calls(route string) int {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	return e.calls.counts[route]
}

// CallCounts returns a copy of all per-route call counts.
func (e *Emulator) CallCounts() map[string]int {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	return maps.Clone(e.calls.counts)
}

// ResetCalls sets all call counts to zero.
func (e *Emulator) ResetCalls() { e.calls.reset() }
