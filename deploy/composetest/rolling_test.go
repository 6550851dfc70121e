package composetest

import "time"

// rollingOrder is the restart order: the NATS nodes, our services (every
// replica), the Proxmox emulator. The Hetzner emulator stands for the
// Hetzner Cloud API, which keeps its servers: it holds them in memory, so
// it is not restarted.
var rollingOrder = []string{"nats-1", "nats-2", "nats-3", "secrets", "accounts", "reconciler", "provider-hetzner", "provider-proxmox", "proxmox-emulator"}

// rollingRestart restarts every container one by one, each time waiting
// until it is healthy again, while instances are created (two creators,
// about two per second) and every API is read and checked. Only UNAVAILABLE
// may answer (and is retried); afterwards everything must converge.
func rollingRestart(s *stack, c *client) result {
	s.t.Helper()
	w := c.newWorld("rolling")
	c.takeUnavailable()
	s.logf("rolling restart: creating instances and reading every API while each container restarts")
	f := c.startCreates(w, "rr", 1000, 2, time.Second)
	r := c.startReaders(f, 2)
	for _, svc := range rollingOrder {
		for _, id := range s.containers(svc) {
			begin := time.Now()
			s.must(s.docker("restart", "-t", "30", id))
			s.waitHealthy(3*time.Minute, id)
			s.logf("  restarted %s %s: healthy after %.1fs (%d creates acknowledged, %d reads)", svc, id[:12], time.Since(begin).Seconds(), f.Acked(), r.reads.Load())
		}
	}
	f.Stop()
	for _, msg := range r.Stop() {
		s.t.Errorf("rolling restart: wrong answer: %s", msg)
	}
	acked := time.Since(f.started)
	f.checkAnswers(s)
	converged := f.waitConverged(s, 6*time.Minute)
	f.verifyServers(s)
	res := result{phase: "rolling restart", instances: f.Acked(), acked: acked, converged: converged, unavailable: c.takeUnavailable(), fleet: f}
	s.logf("%s", res)
	return res
}
