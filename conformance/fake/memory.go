package fake

import (
	"context"
	"fmt"
	"sync"

	"github.com/rs/zerolog"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/memory"
)

// memoryBackend is the memory example provider over a memory.Cloud, each
// client behind a fault layer (the Faults hook). Its Inventory seeds
// managed machines through a client of its own (out of band: not counted,
// no faults); memory has no unmanaged machines, so the cloud profile is
// not claimed.
func memoryBackend(token, _ string, _ zerolog.Logger) (*backend, error) {
	cloud := memory.NewCloud()
	layer := newFaultLayer()
	base := memory.Definition(cloud)
	def := base.Definition()
	def.New = func(bc provider.BuildContext) (provider.Client, error) {
		c, err := base.New(bc)
		if err != nil {
			return nil, err
		}
		f, ok := c.(full)
		if !ok {
			return nil, api.Errorf(api.CodeInternal, "the memory client lacks a capability")
		}
		return layered{inner: f, l: layer}, nil
	}
	seeder, err := base.New(provider.BuildContext{})
	if err != nil {
		return nil, err
	}
	return &backend{
		def: provider.MustDefine(def), offerID: memory.Offers[0].ID, image: "debian-12",
		profiles: []string{conformance.ProfileCore, conformance.ProfileFaults, conformance.ProfileDurable,
			conformance.ProfileTransport, conformance.ProfileSecrets, conformance.ProfileScale, conformance.ProfileSpot},
		config:    func(ref string) map[string]any { return map[string]any{"token": ref} },
		faults:    layer,
		inventory: &memoryInventory{cloud: cloud, seeder: seeder, token: token},
		close:     func() {},
	}, nil
}

// memoryInventory implements conformance.Inventory over a memory.Cloud.
type memoryInventory struct {
	cloud  *memory.Cloud
	seeder provider.Client
	token  string

	mu   sync.Mutex
	seen int
}

// Machines lists the cloud's machines, all managed.
func (m *memoryInventory) Machines(context.Context) ([]conformance.InventoryMachine, error) {
	var out []conformance.InventoryMachine
	for _, x := range m.cloud.Machines() {
		out = append(out, conformance.InventoryMachine{ID: x.ID, Name: x.Name, Managed: true})
	}
	return out, nil
}

// Seed creates n machines named namePrefix-<n>; unmanaged ones do not
// exist in memory (ErrNotSupported).
func (m *memoryInventory) Seed(ctx context.Context, n int, managed bool, namePrefix string) ([]string, error) {
	if !managed {
		return nil, conformance.ErrNotSupported
	}
	acct := api.ProviderAccount{ID: "seed", TenantID: Tenant, Config: map[string]any{"token": "secret://seed"}}
	ids := make([]string, 0, n)
	for range n {
		m.mu.Lock()
		m.seen++
		name := fmt.Sprintf("%s-%d", namePrefix, m.seen)
		m.mu.Unlock()
		call := &provider.Call{IdempotencyKey: name, Account: acct, Clock: clock.Real{}, Secrets: staticSecret(m.token), Log: zerolog.Nop()}
		x, err := m.seeder.Create(ctx, call, api.MachineSpec{Name: name, OfferID: memory.Offers[0].ID, Image: "debian-12"})
		if err != nil {
			return ids, err
		}
		ids = append(ids, x.ID)
	}
	return ids, nil
}

// Remove deletes machines out of band.
func (m *memoryInventory) Remove(_ context.Context, ids []string) error {
	for _, id := range ids {
		m.cloud.Remove(id)
	}
	return nil
}

// staticSecret resolves every reference to one value.
type staticSecret string

func (s staticSecret) Resolve(context.Context, string) (string, error) { return string(s), nil }
