package composetest

import (
	"time"

	"better-compute.io/compute/pkg/bus"
)

// nodeLossLoad is the instances created while a node and a reconciler go.
const nodeLossLoad = 300

// nodeLoss creates 300 instances; after 60 acknowledgements it stops the
// NATS node leading the instances bucket, after 150 it kills a reconciler
// container (SIGKILL); once every create is acknowledged it starts the node
// again. Every instance must converge with the surviving reconciler (the
// killed one's unacknowledged work comes back after the consumer's
// AckWait), with exactly one server each. The reconciler is started again
// at the end.
func nodeLoss(s *stack, c *client) result {
	s.t.Helper()
	w := c.newWorld("nodeloss")
	c.takeUnavailable()
	leader := c.streamLeader("KV_" + bus.BucketInstances)
	node := s.container(leader) // the compose services are named after their servers
	reconcilers := s.containers("reconciler")
	if len(reconcilers) < 2 {
		s.t.Fatalf("node loss needs two reconcilers, compose runs %d", len(reconcilers))
	}
	victim := reconcilers[len(reconcilers)-1]
	s.logf("node loss: creating %d instances", nodeLossLoad)
	f := c.startCreates(w, "nl", nodeLossLoad, 16, 0)
	s.waitAcked(f, 60)
	s.logf("  %d acknowledged: stopping %s, leader of the instances bucket", f.Acked(), leader)
	s.must(s.docker("stop", node))
	s.waitAcked(f, 150)
	s.logf("  %d acknowledged: killing reconciler %s", f.Acked(), victim[:12])
	s.must(s.docker("kill", victim))
	f.Wait()
	acked := time.Since(f.started)
	s.logf("  all %d acknowledged after %.1fs; starting %s again (now leading: %s)", f.Acked(), acked.Seconds(), leader, c.streamLeader("KV_"+bus.BucketInstances))
	s.must(s.docker("start", node))
	converged := f.waitConverged(s, 8*time.Minute)
	f.checkAnswers(s)
	f.verifyServers(s)
	r := result{phase: "node loss", instances: f.Acked(), acked: acked, converged: converged, unavailable: c.takeUnavailable(), fleet: f}
	s.logf("%s", r)
	s.must(s.docker("start", victim))
	s.waitHealthy(3*time.Minute, node, victim)
	return r
}
