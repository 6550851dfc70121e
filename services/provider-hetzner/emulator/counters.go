package emulator

import (
	"maps"
	"sync"
)

// counters counts API calls per route key, and the calls the rate limit
// refused. It is safe for concurrent use.
type counters struct {
	mu      sync.Mutex
	m       map[string]int
	limited int
}

// newCounters returns zeroed counters.
func newCounters() *counters { return &counters{m: map[string]int{}} }

// add counts one call of route.
func (c *counters) add(route string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[route]++
}

// refused counts one call answered 429 by the rate limit.
func (c *counters) refused() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limited++
}

// RateLimitedCalls returns how many calls the rate limit refused (429
// rate_limit_exceeded) since the last ResetCalls: the calls sent while the
// project's budget was spent, e.g. inside a window closed by SetRateLimit.
// Injected 429 faults are not counted here.
func (e *Emulator) RateLimitedCalls() int {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	return e.calls.limited
}

// Calls returns how many calls of route the API received since the last
// ResetCalls, whatever their outcome (429s, 401s and injected faults
// included). Route keys are the method and the path pattern without /v1,
// e.g. "POST /servers", "GET /servers/{id}",
// "POST /servers/{id}/actions/poweron", "GET /actions". Paths that match no route are not counted; the control
// API is never counted.
func (e *Emulator) Calls(route string) int {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	return e.calls.m[route]
}

// CallCounts returns a copy of all call counts by route key.
func (e *Emulator) CallCounts() map[string]int {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	return maps.Clone(e.calls.m)
}

// ResetCalls zeroes the call counts.
func (e *Emulator) ResetCalls() {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	clear(e.calls.m)
	e.calls.limited = 0
}
