package emulator

import (
	"maps"
	"slices"
	"sync"
)

// callCounter counts API calls per route key and logs their order.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
	log    []string
}

// add counts one call of route.
func (c *callCounter) add(route string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[route]++
	if len(c.log) < maxCallLog {
		c.log = append(c.log, route)
	}
}

// maxCallLog bounds the call log, so that a long-running emulator (compute
// up's) does not grow without end: calls past it are counted, not logged.
const maxCallLog = 10000

// reset forgets all counts.
func (c *callCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
	c.log = nil
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

// CallLog returns the route keys of the API calls since the last
// ResetCalls, in the order they arrived (control API calls left out), at
// most the first maxCallLog of them.
func (e *Emulator) CallLog() []string {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	return slices.Clone(e.calls.log)
}

// ResetCalls sets all call counts to zero and empties the call log.
func (e *Emulator) ResetCalls() { e.calls.reset() }
