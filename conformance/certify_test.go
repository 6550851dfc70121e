package conformance_test

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/fake"
)

// scaleMachines is the scale lane's inventory in these tests (the
// certify command uses conformance.DefaultScaleMachines).
func scaleMachines() int {
	if testing.Short() {
		return 300
	}
	return 1000
}

// testMaxPayload is the NATS max payload of the fakes in these tests:
// small, so transport.list-paging crosses it with a small inventory.
const testMaxPayload = 128 << 10

// startFake starts the fake of provider for t.
func startFake(t *testing.T, providerID string, o fake.Options) conformance.Subject {
	t.Helper()
	o.MaxPayload = testMaxPayload
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := fake.Start(ctx, providerID, o)
	if err != nil {
		t.Fatalf("start the %s fake: %v", providerID, err)
	}
	t.Cleanup(env.Close)
	s := env.Subject
	s.ScaleMachines = scaleMachines()
	return s
}

func TestMemoryCertified(t *testing.T) {
	t.Parallel()
	report := conformance.Run(t, startFake(t, "memory", fake.Options{}))
	if report.Verdict != conformance.VerdictCertified {
		t.Fatalf("verdict %s", report.Verdict)
	}
}

func TestHetznerCertified(t *testing.T) {
	t.Parallel()
	report := conformance.Run(t, startFake(t, "hetzner-cloud", fake.Options{}))
	if report.Verdict != conformance.VerdictCertified {
		t.Fatalf("verdict %s", report.Verdict)
	}
}

func TestProxmoxCertified(t *testing.T) {
	t.Parallel()
	report := conformance.Run(t, startFake(t, "proxmox", fake.Options{}))
	if report.Verdict != conformance.VerdictCertified {
		t.Fatalf("verdict %s", report.Verdict)
	}
}

// freePort is a loopback TCP port nothing listens on (just now).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestFakePort: Options.Port (make PORT=…) is the port of the emulator,
// the endpoint under test, for both providers with one.
func TestFakePort(t *testing.T) {
	for _, id := range []string{"hetzner-cloud", "proxmox"} {
		port := freePort(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		env, err := fake.Start(ctx, id, fake.Options{Port: port})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		u, err := url.Parse(env.Endpoint)
		env.Close()
		if err != nil || u.Port() != strconv.Itoa(port) {
			t.Errorf("%s: endpoint %q, want port %d", id, env.Endpoint, port)
		}
	}
}
