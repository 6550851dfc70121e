package composetest

import (
	"fmt"
	"time"
)

// result is what a load phase measured.
type result struct {
	phase       string
	instances   int
	acked       time.Duration // first create to the last acknowledgement
	converged   time.Duration // first create to every instance running
	unavailable string        // UNAVAILABLE answers retried, by verb
	fleet       *fleet
}

func (r result) String() string {
	return fmt.Sprintf("%-52s %4d instances  acknowledged in %6.1fs  converged in %6.1fs  UNAVAILABLE retried: %s",
		r.phase, r.instances, r.acked.Seconds(), r.converged.Seconds(), r.unavailable)
}

// waitAcked waits until the fleet has n acknowledged creates.
func (s *stack) waitAcked(f *fleet, n int) {
	s.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for f.Acked() < n {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: %d creates acknowledged after 5m, want %d", f.w.tenant, f.Acked(), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
