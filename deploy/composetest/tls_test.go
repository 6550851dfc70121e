package composetest

import (
	"path/filepath"
	"strings"
	"time"

	"better-compute.io/compute/pkg/bus"
)

// caFile is the CA deploy/gen-env.sh made for the stack, which every client
// pins.
func (s *stack) caFile() string { return filepath.Join(s.env["COMPUTE_TLS_DIR"], "ca.pem") }

// checkTLSAndMonitoring checks what deploy/nats-cluster.conf promises from
// the host: every node refuses a client that does not trust the stack's CA
// (TLS is required, and the certificate is the generated one, not one the
// system trusts), and no container publishes nats-server's monitoring port.
func checkTLSAndMonitoring(s *stack) {
	s.t.Helper()
	for _, url := range strings.Split(hostNATSURLs, ",") {
		nc, err := bus.Connect(bus.ConnectOptions{URL: url, Name: "composetest-no-ca", CredsFile: s.adminCreds(), FailFast: true})
		if err == nil {
			nc.Close()
			s.t.Fatalf("%s: connected without the stack's CA: TLS is off or the certificate is trusted by the system", url)
		}
		if !strings.Contains(err.Error(), "certificate") {
			s.t.Fatalf("%s without the stack's CA: %v, want a certificate verification error", url, err)
		}
	}
	s.logf("every node refuses a client that does not pin the stack's CA")
	for _, node := range []string{"nats-1", "nats-2", "nats-3"} {
		// compose answers an error or ":0" for a port it does not publish
		out, err := s.composeRun(time.Minute, "port", node, "8222")
		if published := strings.TrimSpace(out); err == nil && published != "" && !strings.HasSuffix(published, ":0") {
			s.t.Fatalf("%s publishes its monitoring port 8222 on %s", node, published)
		}
	}
	s.logf("no node publishes its monitoring port")
}
