package bustest

import (
	"testing"
	"time"
)

// WaitFor polls cond every 5 ms until it holds, failing the test (naming
// what) after 10 s: a wait for a condition, never a timed assertion.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
