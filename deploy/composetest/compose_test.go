package composetest

import (
	"strings"
	"testing"
	"time"
)

// TestCompose starts deploy/compose.yaml and runs, in order: tenants acme
// and globex created at runtime and kept apart, the README walkthrough, scale-out (one and three reconcilers), node loss, a rolling
// restart of every container, and a restart of the whole NATS cluster. It
// removes the project's containers, network and volumes before (a failed
// run may have left them) and after.
func TestCompose(t *testing.T) {
	s := newStack(t)
	s.logf("removing what an earlier run may have left (project %s)", project)
	s.down()
	t.Cleanup(func() {
		if t.Failed() {
			s.dumpLogs()
		}
		s.logf("removing containers, network and volumes")
		s.down()
		s.logf("done")
	})
	s.logf("starting the stack with %s", strings.Join(s.compose, " "))
	s.must(s.composeRun(5*time.Minute, "up", "-d"))
	s.waitHealthy(3*time.Minute, s.serviceIDs(allServices...)...)
	s.logf("every container is healthy")
	c := connectAdmin(s)
	checkTLSAndMonitoring(s)

	s.logf("tenants acme and globex through the tenants API, each with its own credential")
	tenancy(s, c)

	s.logf("README walkthrough with bin/compute from the host")
	walkthrough(s, c)
	s.logf("README walkthrough done")

	scale := scaleOut(s, c)
	loss := nodeLoss(s, c)
	rolling := rollingRestart(s, c)
	restart := clusterRestart(s, c, append(append([]result{}, scale...), loss, rolling))

	t.Logf("results:")
	for _, r := range append(append([]result{}, scale...), loss, rolling, restart) {
		t.Logf("  %s", r)
	}
	for i := 0; i+1 < len(scale); i += 2 {
		t.Logf("  %s vs %s: convergence ratio %.2f", scale[i].phase, scale[i+1].phase, scale[i].converged.Seconds()/scale[i+1].converged.Seconds())
	}
}
