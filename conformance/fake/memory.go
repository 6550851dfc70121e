package fake

import (
	"context"
	"fmt"
	"sync"

	"github.com/rs/zerolog"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/memory"
)

// memoryBackend is the memory example provider over a memory.Cloud, each
// client behind a fault layer (the Faults hook), its machines with SSH
// endpoints (the SSH hook). Its Inventory seeds managed machines out of
// band (memory.Cloud.Seed: not counted, no faults, no SSH endpoint);
// memory has no unmanaged machines, so the cloud profile is not claimed.
func memoryBackend(_ string, _ string, log zerolog.Logger) (*backend, error) {
	fs, err := newFleetSSH(log)
	if err != nil {
		return nil, err
	}
	cloud := memory.NewCloud()
	cloud.SetSSH(fs.fleet)
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
	return &backend{
		def: provider.MustDefine(def), offerID: memory.Offers[0].ID, image: "debian-12",
		profiles: []string{conformance.ProfileCore, conformance.ProfileFaults, conformance.ProfileDurable,
			conformance.ProfileTransport, conformance.ProfileSecrets, conformance.ProfileScale, conformance.ProfileSpot,
			conformance.ProfileSSH, conformance.ProfileLabels},
		config:    func(ref string) map[string]any { return map[string]any{"token": ref} },
		faults:    layer,
		inventory: &memoryInventory{cloud: cloud},
		ssh:       fs,
		close:     fs.fleet.Close,
	}, nil
}

// memoryInventory implements conformance.Inventory over a memory.Cloud.
type memoryInventory struct {
	cloud *memory.Cloud

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
	ids := make([]string, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return ids, err
		}
		m.mu.Lock()
		m.seen++
		name := fmt.Sprintf("%s-%d", namePrefix, m.seen)
		m.mu.Unlock()
		ids = append(ids, m.cloud.Seed(name, name).ID)
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
