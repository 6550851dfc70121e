package conformance_test

import (
	"context"
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
