package conformance

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
)

// check is what a behaviour runs with: the run (subject, provider calls,
// fixtures) and the outcome it records. Fatalf and Incompletef stop the
// behaviour (runtime.Goexit, as testing.T does); its cleanups then run in
// reverse order. C is safe for concurrent use.
type check struct {
	ctx    context.Context
	cancel context.CancelFunc
	r      *run
	b      *Behaviour

	mu         sync.Mutex
	failure    string // first failure, "" while passing
	incomplete string // why it could not finish, "" when it did
	log        []string
	metrics    map[string]float64
	cleanups   []func()
	seq        int
}

// Logf records a line in the behaviour's log (and the report).
func (c *check) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

// Errorf records a failure and goes on.
func (c *check) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == "" {
		c.failure = msg
	}
	c.log = append(c.log, "FAIL: "+msg)
}

// Fatalf records a failure and stops the behaviour.
func (c *check) Fatalf(format string, args ...any) {
	c.Errorf(format, args...)
	runtime.Goexit()
}

// Incompletef records that the behaviour could not run to the end for a
// reason that is not the provider's fault (a hook cannot do something),
// and stops it.
func (c *check) Incompletef(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.mu.Lock()
	if c.incomplete == "" {
		c.incomplete = msg
	}
	c.log = append(c.log, "INCOMPLETE: "+msg)
	c.mu.Unlock()
	runtime.Goexit()
}

// Metric records a measured figure (latencies in milliseconds).
func (c *check) Metric(name string, value float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.metrics == nil {
		c.metrics = map[string]float64{}
	}
	c.metrics[name] = value
}

// Cleanup registers f to run when the behaviour ends, pass or fail.
func (c *check) Cleanup(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups = append(c.cleanups, f)
}

// runCleanups runs the cleanups in reverse order, each with panics and
// Fatalf contained.
func (c *check) runCleanups() {
	for {
		c.mu.Lock()
		n := len(c.cleanups)
		if n == 0 {
			c.mu.Unlock()
			return
		}
		f := c.cleanups[n-1]
		c.cleanups = c.cleanups[:n-1]
		c.mu.Unlock()
		c.contained(f)
	}
}

// contained runs f on its own goroutine, so a Goexit or panic in it ends
// only f.
func (c *check) contained(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				c.Errorf("cleanup panicked: %v", p)
			}
		}()
		f()
	}()
	<-done
}

// name returns a new machine name, also used as its idempotency key:
// <prefix>-<behaviour id with dots as hyphens>-<tag><n>. Names are
// lower-case letters, digits and hyphens, unique within the run.
func (c *check) name(tag string) string {
	c.mu.Lock()
	c.seq++
	n := c.seq
	c.mu.Unlock()
	return fmt.Sprintf("%s-%s-%s%d", c.r.prefix, strings.ReplaceAll(c.b.ID, ".", "-"), tag, n)
}

// outcome is the status, reason, log and metrics recorded so far.
func (c *check) outcome() (Status, string, []string, map[string]float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	log := append([]string(nil), c.log...)
	switch {
	case c.failure != "":
		return Failed, c.failure, log, c.metrics
	case c.incomplete != "":
		return Incomplete, c.incomplete, log, c.metrics
	}
	return Passed, "", log, c.metrics
}

// pollLimit bounds how long a behaviour waits for a machine to change.
const pollLimit = 3 * time.Minute

// eventually calls f until it reports done, backing off from 20 ms to 1 s
// between calls, for at most pollLimit or until the behaviour ends. It
// returns f's last error (or a timeout error).
func (c *check) eventually(what string, f func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(c.ctx, pollLimit)
	defer cancel()
	wait := 20 * time.Millisecond
	var last error
	for {
		done, err := f(ctx)
		if done {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%s: gave up after %s: %w", what, pollLimit, last)
			}
			return fmt.Errorf("%s: gave up after %s", what, pollLimit)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}
