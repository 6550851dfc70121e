package composetest

import (
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
)

// clusterRestart stops all three NATS nodes at once and starts them again.
// Every service must reconnect and resume in its own process (no container
// restarted), the state written before must be intact, and new instances
// must converge.
func clusterRestart(s *stack, c *client, earlier []result) result {
	s.t.Helper()
	services := s.serviceIDs(ourServices...)
	startedAt := map[string]string{}
	for _, id := range services {
		startedAt[id] = s.inspect(id, "{{.State.StartedAt}}")
	}
	s.logf("cluster restart: stopping every NATS node")
	s.must(s.composeRun(2*time.Minute, "stop", "-t", "10", "nats-1", "nats-2", "nats-3"))
	time.Sleep(5 * time.Second) // an outage: the services see no server at all
	s.must(s.composeRun(2*time.Minute, "start", "nats-1", "nats-2", "nats-3"))
	s.waitHealthy(3*time.Minute, s.serviceIDs(natsNodes...)...)
	s.logf("  NATS nodes healthy; waiting for the services")
	s.waitHealthy(3*time.Minute, services...)
	for _, id := range services {
		if now := s.inspect(id, "{{.State.StartedAt}}"); now != startedAt[id] {
			s.t.Errorf("container %s was restarted (started %s, now %s): it did not resume in its process", s.inspect(id, "{{.Name}}"), startedAt[id], now)
		}
	}
	for _, e := range earlier {
		f := e.fleet
		all, err := c.listAll(f.w.tenant, time.Now().Add(2*time.Minute))
		if err != nil {
			s.t.Fatalf("list %s after the cluster restart: %v", f.w.tenant, err)
		}
		running := 0
		for _, inst := range all {
			if inst.Status.Phase == api.PhaseRunning {
				running++
			}
		}
		if len(all) != f.Acked() || running != len(all) {
			s.t.Errorf("tenant %s after the cluster restart: %d instances (%d running), %d were acknowledged", f.w.tenant, len(all), running, f.Acked())
		}
	}
	w := c.newWorld("restart")
	c.takeUnavailable()
	since := time.Now().UTC().Format(time.RFC3339Nano)
	f := c.startCreates(w, "cr", 30, 4, 0)
	f.Wait()
	acked := time.Since(f.started)
	converged := f.waitConverged(s, 4*time.Minute)
	f.checkAnswers(s)
	f.verifyServers(s)
	// every reconciler replica consumes work again, not only one of them
	for _, id := range s.containers("reconciler") {
		if logs := s.must(s.docker("logs", "--since", since, id)); !strings.Contains(logs, `"message":"provider create answered"`) {
			s.t.Errorf("reconciler %s reconciled nothing after the cluster restart", id[:12])
		}
	}
	r := result{phase: "after a cluster restart", instances: f.Acked(), acked: acked, converged: converged, unavailable: c.takeUnavailable(), fleet: f}
	s.logf("%s", r)
	return r
}
