package fake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	robot "better-compute.io/compute/services/provider-hetzner-robot"
	"better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

// robotServers is how many free EX44 servers the hetzner-robot fake's
// account rents: the behaviours claim them by product (the subject's
// offer "EX44"), several at a time.
const robotServers = 64

// robotResetTypes are the fake servers' resets: every type, so that every
// power action maps to one (real servers list either sw or power and
// power_long, next to hw and man).
var robotResetTypes = []string{"sw", "hw", "power", "power_long", "man"}

// robotBackend is the hetzner-robot provider against the Robot webservice
// emulator (any login works; the account's user and password are both
// the run's secret), each client behind the fault layer (the emulator has
// no fault API), its servers' systems on an SSH fleet. The cloud and
// scale profiles are not claimed: the emulator's servers are rented, not
// made, so the Inventory hook cannot seed or remove them. Nor is ssh: a
// released server keeps running the system it had (the platform does not
// own it; ssh.drain wants a deleted machine to stop answering), and a
// reinstalled one runs its rescue system (another host key than the one
// the hook changes) until the bootstrap installs it.
func robotBackend(_ string, addr string, log zerolog.Logger) (*backend, error) {
	fs, err := newFleetSSH(log)
	if err != nil {
		return nil, err
	}
	// The documented hourly limits (200 server calls) would end a run
	// early: the fake's are out of reach (the provider's RATE_LIMITED
	// mapping has its own tests).
	unlimited := map[string]int{}
	for _, class := range []string{emulator.LimitServer, emulator.LimitResetGet, emulator.LimitResetPost, emulator.LimitBoot,
		emulator.LimitKeyGet, emulator.LimitKeyWrite, emulator.LimitOrder} {
		unlimited[class] = 1 << 30
	}
	srv, err := emulator.Start(emulator.Options{Logger: log, SSH: fs.fleet, Limits: unlimited}, addr)
	if err != nil {
		fs.fleet.Close()
		return nil, err
	}
	closeAll := func() { _ = srv.Close(); fs.fleet.Close() }
	for n := 1; n <= robotServers; n++ {
		if err := srv.Emulator().AddServer(emulator.ServerSpec{Number: 1000 + n, Product: "EX44", ResetTypes: robotResetTypes}); err != nil {
			closeAll()
			return nil, err
		}
	}
	layer := newFaultLayer()
	base := robot.Definition(robot.WithEndpoint(srv.URL()))
	def := base.Definition()
	def.New = func(bc provider.BuildContext) (provider.Client, error) {
		c, err := base.New(bc)
		if err != nil {
			return nil, err
		}
		f, ok := c.(robotCalls)
		if !ok {
			return nil, api.Errorf(api.CodeInternal, "the hetzner-robot client lacks a capability")
		}
		return layered{inner: robotClient{f}, l: layer}, nil
	}
	_, key := fs.Login()
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key.PublicKey())))
	return &backend{
		def: provider.MustDefine(def), endpoint: srv.URL(), offerID: "EX44",
		image: "/root/.oldroot/nfs/images/Ubuntu-2404-noble-amd64-base.tar.gz",
		profiles: []string{conformance.ProfileCore, conformance.ProfileFaults, conformance.ProfileDurable,
			conformance.ProfileTransport, conformance.ProfileSecrets, conformance.ProfileMetal},
		config: func(ref string) map[string]any {
			return map[string]any{robot.FieldUser: ref, robot.FieldPassword: ref, robot.FieldSSHPublicKey: pub}
		},
		faults:    layer,
		inventory: &robotInventory{emu: srv.Emulator(), next: 1000 + robotServers},
		close:     closeAll,
	}, nil
}

// robotInventory implements conformance.Inventory over the emulator's
// account: a seeded server is one rented out of band (managed: already
// claimed under the key namePrefix-<n>; else named namePrefix-<n> by
// another tool), a removed one a rental that ended.
type robotInventory struct {
	emu  *emulator.Emulator
	mu   sync.Mutex
	next int
}

// Machines lists the account's servers; managed are those claimed by the
// platform, named by their claim's key (the conformance program names a
// machine and its key alike).
func (r *robotInventory) Machines(context.Context) ([]conformance.InventoryMachine, error) {
	var out []conformance.InventoryMachine
	for _, s := range r.emu.Servers() {
		key, managed := strings.CutPrefix(s.Name, robot.ClaimPrefix)
		if !managed {
			key = s.Name
		}
		out = append(out, conformance.InventoryMachine{ID: strconv.Itoa(s.Number), Name: key, Managed: managed})
	}
	return out, nil
}

// Seed rents n more servers, claimed (managed) or named by another tool.
func (r *robotInventory) Seed(ctx context.Context, n int, managed bool, namePrefix string) ([]string, error) {
	ids := make([]string, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return ids, err
		}
		r.mu.Lock()
		r.next++
		num := r.next
		r.mu.Unlock()
		name := fmt.Sprintf("%s-%d", namePrefix, num)
		if managed {
			name = robot.ClaimName(name)
		}
		if err := r.emu.AddServer(emulator.ServerSpec{Number: num, Product: "EX101", Name: name, ResetTypes: robotResetTypes}); err != nil {
			return ids, err
		}
		ids = append(ids, strconv.Itoa(num))
	}
	return ids, nil
}

// Remove ends the rentals of ids.
func (r *robotInventory) Remove(_ context.Context, ids []string) error {
	for _, id := range ids {
		n, err := strconv.Atoi(id)
		if err != nil {
			return fmt.Errorf("machine id %q is not a server number", id)
		}
		r.emu.RemoveServer(n)
	}
	return nil
}

// robotCalls are the calls of the capabilities hetzner-robot claims.
type robotCalls interface {
	provider.Client
	provider.Powerer
	provider.Reinstaller
	provider.Lister
	provider.KeyDeleter
}

// robotClient is the hetzner-robot client as the fault layer takes it
// (full): the calls of capabilities it does not claim (labels, resize,
// metrics) answer UNSUPPORTED, as Serve answers them before a client sees
// them.
type robotClient struct{ robotCalls }

func (robotClient) Relabel(context.Context, *provider.Call, string, map[string]string) (*api.ExternalMachine, error) {
	return nil, api.Errorf(api.CodeUnsupported, "hetzner-robot does not support labels")
}

func (robotClient) Resize(context.Context, *provider.Call, api.ProviderResizeRequest) (*api.ResizeResult, error) {
	return nil, api.Errorf(api.CodeUnsupported, "hetzner-robot does not support resize")
}

func (robotClient) Metrics(context.Context, *provider.Call, string, api.MetricsWindow) (*api.Metrics, error) {
	return nil, api.Errorf(api.CodeUnsupported, "hetzner-robot does not support metrics")
}
