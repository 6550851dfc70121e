// Package clock is the project's one time source for code that tests run
// on fake time: the emulators measure actions and tasks on a Clock, a
// provider call waits on one (provider.Sleep), and the reconciler stamps
// records, leases and retries with one. A Fake makes them deterministic.
package clock

import (
	"sync"
	"time"
)

// Clock tells what time it is, and waits on that time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After is time.After on this clock: the channel receives the time
	// once d has passed on it.
	After(d time.Duration) <-chan time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Fake is a manually advanced clock for tests. It is safe for concurrent
// use. After advances it, so a wait on it ends at once.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a Fake that reads start until advanced.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start}
}

// Now returns the fake current time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the fake time forward by d.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// After advances the fake time by d and returns a channel that already
// holds the new time: whoever waits d on this clock has waited it, at once
// and deterministically.
func (c *Fake) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// Shifted is the wall clock moved ahead by Advance: time passes as on the
// wall (so a system under test keeps running), and a test jumps over a
// lease, a backoff or a timeout without sleeping. Safe for concurrent use;
// the zero value reads the wall clock.
type Shifted struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the wall time plus every Advance so far.
func (c *Shifted) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock ahead by d.
func (c *Shifted) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// After returns time.After(d): a wait of d on the wall (an Advance does
// not end it early).
func (c *Shifted) After(d time.Duration) <-chan time.Time { return time.After(d) }
