package bustest

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/bus"
)

// Child is the test binary re-executed as a separate process that runs
// one test function (a service under a kill test) and that the test
// SIGKILLs, or that kills itself (KillSelf). Set Test, Env and Output,
// then Start; Start again once a process ended starts a fresh one. Its
// methods are safe for concurrent use.
type Child struct {
	// Test is the name of the test function the child runs, e.g.
	// "TestReconcilerChildProcess" (matched exactly).
	Test string
	// Env holds KEY=VALUE pairs added to this process's environment for
	// every start, e.g. the NATS URL ChildConnect reads.
	Env []string
	// Output receives the child's stdout and stderr; nil keeps only their
	// last 4 KiB, which WaitKilled shows when the child did not end by
	// SIGKILL.
	Output io.Writer

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed once cmd ended
	err     error         // cmd.Wait's, set before done is closed
	counted bool          // whether Kill already counted cmd
	kills   int
	cleanup bool
	tail    tailBuffer // the last process's output when Output is nil
}

// tailBuffer keeps the last tailBytes bytes written to it; safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// tailBytes is how much of a child's output a tailBuffer keeps.
const tailBytes = 4 << 10

// Write implements io.Writer.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailBytes {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-tailBytes:]...)
	}
	return len(p), nil
}

// reset empties the buffer.
func (b *tailBuffer) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = nil
}

// String is what the buffer keeps.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Start starts a process for c.Test with c.Env and env (KEY=VALUE) added
// to this process's environment, failing t if it cannot. A process still
// running when t ends is SIGKILLed then.
func (c *Child) Start(t testing.TB, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+c.Test+"$", "-test.count=1") //nolint:gosec // the test binary
	cmd.Env = append(append(os.Environ(), c.Env...), env...)
	cmd.Stdout, cmd.Stderr = c.Output, c.Output
	if c.Output == nil {
		c.tail.reset()
		cmd.Stdout, cmd.Stderr = &c.tail, &c.tail
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", c.Test, err)
	}
	done := make(chan struct{})
	c.mu.Lock()
	c.cmd, c.done, c.err, c.counted = cmd, done, nil, false
	register := !c.cleanup
	c.cleanup = true
	c.mu.Unlock()
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		if c.cmd == cmd {
			c.err = err
		}
		c.mu.Unlock()
		close(done)
	}()
	if register {
		t.Cleanup(c.Kill)
	}
}

// Done returns a channel closed once the last started process ended
// (nil before the first Start).
func (c *Child) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// Kill SIGKILLs the last started process and waits until it ended; it
// does nothing before the first Start and returns at once for a process
// that already ended.
func (c *Child) Kill() {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	if cmd != nil && !c.counted {
		c.counted = true
		c.kills++
	}
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Kills reports how many started processes Kill ended (each counted
// once).
func (c *Child) Kills() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kills
}

// WaitKilled waits up to timeout for the last started process to end,
// failing t if it does not or if it ended other than by SIGKILL (a child
// that was to kill itself at some point).
func (c *Child) WaitKilled(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(timeout):
		t.Fatalf("child %s never reached its kill point", c.Test)
	}
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child %s ended with %v, want SIGKILL; the end of its output:\n%s", c.Test, err, c.tail.String())
	}
}

// ChildConnect is the child's side: in a process Child started it
// connects as name to the NATS server at the URL in the environment
// variable urlEnv and opens the stores (failing t within 60 s: under
// -race on a loaded machine opening every bucket once took over 10 s and
// the child's exit then read as a kill test's failure). In an
// ordinary test run (urlEnv unset) it skips t: the test function is then
// only the helper process of parent (a test name or a description).
func ChildConnect(t *testing.T, urlEnv, name, parent string) (*nats.Conn, *bus.Stores) {
	t.Helper()
	url := os.Getenv(urlEnv)
	if url == "" {
		t.Skip("helper process of " + parent)
	}
	nc, err := bus.Connect(bus.ConnectOptions{URL: url, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return nc, st
}

// KillSelf SIGKILLs the calling process (a child at its kill point) and
// never returns.
func KillSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
