// Package fake starts credential-free conformance subjects in-process: the
// harness (embedded NATS, the secrets service holding a generated API
// token, the provider service) around the provider's emulator, with the
// conformance hooks (Faults, Inventory) wired to the emulator's Go fault
// API and Service to the harness's provider service.
//
// Each provider is one entry of a small registry of setups (see setups);
// adding a provider (proxmox) is one function returning its backend.
package fake

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/harness"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Tenant is the tenant of the fake account.
const Tenant = harness.Tenant

// backend is what one provider's setup contributes: its definition
// (pointed at its emulator), the profiles its hooks can drive, an offer
// and image create accepts, the account config around the token
// reference, the hooks, and how to stop the emulator.
type backend struct {
	def       *provider.Defined
	endpoint  string // the emulator's base URL ("" without one)
	profiles  []string
	offerID   string
	image     string
	config    func(tokenRef string) map[string]any
	faults    conformance.Faults
	inventory conformance.Inventory
	ssh       conformance.SSH
	network   conformance.Network
	// nodeNetwork is the Proxmox side (bridges, VLANs, static addresses, nodes).
	nodeNetwork conformance.NodeNetwork
	close       func()
}

// setup starts a provider's emulator accepting token, listening on addr
// (host:port; port 0 picks one; ignored by a provider without an HTTP
// API), and returns its backend; log receives the emulator's lines.
type setup func(token, addr string, log zerolog.Logger) (*backend, error)

// setups are the providers fake can start, by provider id.
var setups = map[string]setup{
	"memory":        memoryBackend,
	"hetzner-cloud": hetznerBackend,
	"hetzner-robot": robotBackend,
}

// Providers lists the provider ids Start supports, sorted.
func Providers() []string {
	ids := make([]string, 0, len(setups))
	for id := range setups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Options configures Start. The zero value is usable.
type Options struct {
	// Wrap, when set, wraps every client the provider builds (tests break
	// a provider this way). The wrapper must implement the optional
	// interfaces of the provider's claimed capabilities.
	Wrap func(provider.Client) provider.Client
	// LogTo also receives every log line (JSON) of the services and the
	// emulator; they are always captured for Subject.Logs.
	LogTo io.Writer
	// MaxPayload is the embedded server's max message size in bytes (0:
	// the NATS default, 1 MiB). A smaller one lets tests cross it, in
	// transport.list-paging, with a smaller inventory.
	MaxPayload int32
	// Port is the loopback port the provider's emulator (the endpoint
	// under test) listens on (0: any free one). The memory provider has
	// no endpoint and ignores it.
	Port int
}

// Env is a started fake: the subject to certify (claiming every profile
// the fake can drive, with every hook set) and what runs behind it.
// Close stops everything.
type Env struct {
	Subject conformance.Subject
	// NATSURL is the embedded server's client URL.
	NATSURL string
	// Endpoint is the base URL of the provider's emulator, the endpoint
	// under test ("" for a provider without an HTTP API).
	Endpoint string
	h        *harness.Harness
}

// Close stops the provider, the emulator, the secrets service and NATS,
// and removes the temporary directory.
func (e *Env) Close() {
	if e.h != nil {
		e.h.Close()
	}
}

// Start starts the fake of providerID. Errors: an unknown provider id
// (naming the supported ones), or a part failing to start.
func Start(ctx context.Context, providerID string, o Options) (_ *Env, err error) {
	start, ok := setups[providerID]
	if !ok {
		return nil, fmt.Errorf("no fake setup for provider %q (have %s)", providerID, strings.Join(Providers(), ", "))
	}
	h, err := harness.Start(ctx, harness.Options{Name: providerID, LogTo: o.LogTo, MaxPayload: o.MaxPayload})
	if err != nil {
		return nil, err
	}
	env := &Env{NATSURL: h.NATSURL, h: h}
	defer func() {
		if err != nil {
			env.Close()
		}
	}()
	token := "cf-token-" + rand.Text()
	ref, err := h.PutSecret(ctx, "conformance-token", token)
	if err != nil {
		return nil, fmt.Errorf("store the fake API token: %w", err)
	}
	be, err := start(token, net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)), h.Log)
	if err != nil {
		return nil, fmt.Errorf("start the %s emulator: %w", providerID, err)
	}
	h.OnClose(be.close)
	env.Endpoint = be.endpoint
	svc, err := h.Serve(ctx, harness.Wrapped(be.def, o.Wrap))
	if err != nil {
		return nil, err
	}
	nc, err := h.Connect("conformance")
	if err != nil {
		return nil, err
	}
	env.Subject = conformance.Subject{
		ProviderID: be.def.ID(), NC: nc,
		Account: api.ProviderAccount{ID: api.NewID(api.PrefixAccount), TenantID: Tenant, Version: 1, Config: be.config(ref)},
		OfferID: be.offerID, Image: be.image, Profiles: slices.Clone(be.profiles),
		PowerObservable: true, SecretValues: []string{token}, Logs: h.Logs,
		Faults: be.faults, Inventory: be.inventory, Service: svc, SSH: be.ssh, Network: be.network,
		NodeNetwork: be.nodeNetwork,
	}
	return env, nil
}
