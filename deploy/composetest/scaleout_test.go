package composetest

import (
	"fmt"
	"time"
)

// scaleLoad is the instances created for each reconciler count.
const scaleLoad = 300

// scaleSetups are the conditions of the scale-out runs: how long each
// Hetzner API call takes (about the real API's; a slow one: the emulator
// answers at once otherwise, and the reconcilers would mostly wait for the
// 1 s actions and the poll interval), and how many provider-hetzner
// replicas run (each makes at most 64 provider calls at once).
var scaleSetups = []struct {
	latency   time.Duration
	providers int
}{
	{200 * time.Millisecond, 1},
	{time.Second, 1},
	{time.Second, 3},
}

// scaleOut creates the same load with one and with three reconciler
// replicas in each setup and measures each convergence; it leaves two
// reconcilers and one provider, as deploy/compose.yaml has.
func scaleOut(s *stack, c *client) []result {
	s.t.Helper()
	defer setEmulatorLatency(s.t, 0)
	var results []result
	for _, setup := range scaleSetups {
		setEmulatorLatency(s.t, setup.latency)
		scaleService(s, "provider-hetzner", setup.providers)
		for _, n := range []int{1, 3} {
			scaleService(s, "reconciler", n)
			name := fmt.Sprintf("%d-%d-%d", n, setup.providers, setup.latency.Milliseconds())
			w := c.newWorld("scale" + name)
			c.takeUnavailable()
			what := fmt.Sprintf("%d reconciler(s), %d provider(s), %s/call", n, setup.providers, setup.latency)
			s.logf("scale-out: %d instances, %s", scaleLoad, what)
			f := c.startCreates(w, "s"+name, scaleLoad, 16, 0)
			f.Wait()
			acked := time.Since(f.started)
			converged := f.waitConverged(s, 6*time.Minute)
			f.checkAnswers(s)
			f.verifyServers(s)
			r := result{phase: "scale-out, " + what, instances: f.Acked(), acked: acked, converged: converged, unavailable: c.takeUnavailable(), fleet: f}
			s.logf("%s", r)
			results = append(results, r)
		}
	}
	scaleService(s, "provider-hetzner", 1)
	scaleService(s, "reconciler", 2)
	return results
}

// scaleService runs n containers of a service and waits until they are healthy.
func scaleService(s *stack, service string, n int) {
	s.t.Helper()
	s.must(s.composeRun(3*time.Minute, "up", "-d", "--no-deps", "--scale", fmt.Sprintf("%s=%d", service, n), service))
	ids := s.containers(service)
	if len(ids) != n {
		s.t.Fatalf("scaled %s to %d, compose runs %d", service, n, len(ids))
	}
	s.waitHealthy(2*time.Minute, ids...)
}
