package conformance_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/fake"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// reusesHeldAddress gives every machine created with a static address the
// address of a machine it made before that still exists (a provider that
// caches the first address it configured), while keeping its other
// behaviour.
type reusesHeldAddress struct {
	full
	mu   *sync.Mutex
	held map[string]api.StaticAddress // machine id → the address it got
}

func (b reusesHeldAddress) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	b.mu.Lock()
	for _, a := range b.held {
		spec.Address = &a
		break
	}
	b.mu.Unlock()
	m, err := b.full.Create(ctx, call, spec)
	if err == nil && spec.Address != nil {
		b.mu.Lock()
		b.held[m.ID] = *spec.Address
		b.mu.Unlock()
	}
	return m, err
}

func (b reusesHeldAddress) Delete(ctx context.Context, call *provider.Call, id string) error {
	b.mu.Lock()
	delete(b.held, id)
	b.mu.Unlock()
	return b.full.Delete(ctx, call, id)
}

// A Proxmox provider that hands a held address to a second machine fails
// net.static.never-reused, and only it of the network behaviours: one
// machine at a time still gets the address it asks for.
func TestBrokenProxmoxReusingAnAddressFails(t *testing.T) {
	t.Parallel()
	s := startFake(t, "proxmox", fake.Options{Wrap: func(c provider.Client) provider.Client {
		return reusesHeldAddress{full: c.(full), mu: &sync.Mutex{}, held: map[string]api.StaticAddress{}}
	}})
	network := []string{"net.vlan.applied", "net.static.applied", "net.static.never-reused", "net.placement.full-node-skipped"}
	report, err := conformance.Certify(t.Context(), s, conformance.Options{Seed: 1, Only: network})
	if err != nil {
		t.Fatal(err)
	}
	got := report.WithStatus(conformance.Failed)
	if !slices.Equal(got, []string{"net.static.never-reused"}) {
		for _, id := range got {
			res, _ := report.Result(id)
			t.Logf("%s: %s", id, res.Reason)
		}
		t.Errorf("failed behaviours %v, want [net.static.never-reused]", got)
	}
	for _, id := range network {
		if res, _ := report.Result(id); res.Status != conformance.Passed && res.Status != conformance.Failed {
			t.Errorf("%s: %s (%s)", id, res.Status, res.Reason)
		}
	}
}
