package provider_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// The tiny provider of these tests: a Client over an in-memory map whose Get
// misbehaves on request (ids "panic", "foreign", "leak"), a full client with
// every capability, and a bare one with none.

const tokenValue = "tok-8f2c-very-secret" // what the fake resolver answers for secretRef

var tinyOffers = []api.Offer{
	{ID: "s", Kind: api.KindVPS, Region: "fsn1", Vcpu: 2, MemoryGiB: 4, Available: true},
	{ID: "l", Kind: api.KindVPS, Region: "fsn1", Vcpu: 8, MemoryGiB: 32, Available: true},
	{ID: "g", Kind: api.KindMetal, Region: "nbg1", Vcpu: 16, MemoryGiB: 64, GPUs: 1},
}

var tinyManifest = []api.ManifestField{
	{Name: "token", Type: provider.TypeSecret, Required: true},
	{Name: "region", Type: provider.TypeOption, Options: []string{"fsn1", "nbg1"}, Default: "fsn1"},
}

// tinyState is shared by every client a definition builds.
type tinyState struct {
	builds     atomic.Int64 // constructor calls, failed ones included
	failBuilds atomic.Int64 // the next n constructor calls fail
	creates    atomic.Int64

	mu       sync.Mutex
	lastCall provider.Call
	lastSpec api.MachineSpec
	lastList [2]any // cursor, limit
	machines map[string]*api.ExternalMachine
}

func (s *tinyState) remember(call *provider.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastCall = *call
}

func (s *tinyState) last() provider.Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastCall
}

type bareClient struct{ st *tinyState }

func (c *bareClient) ListOffers(_ context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	c.st.remember(call)
	out := []api.Offer{}
	for _, o := range tinyOffers {
		if q.Matches(o) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (c *bareClient) Create(_ context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	c.st.remember(call)
	c.st.creates.Add(1)
	m := &api.ExternalMachine{ID: "m-" + call.IdempotencyKey, Name: spec.Name, State: api.StatePending, OfferID: spec.OfferID,
		Region: call.Account.Config["region"].(string), Addresses: []string{}}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	c.st.lastSpec = spec
	c.st.machines[m.ID] = m
	return m, nil
}

func (c *bareClient) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	c.st.remember(call)
	switch id {
	case "panic":
		panic("client bug holding " + tokenValue)
	case "foreign":
		return nil, errors.New("upstream said no")
	case "leak":
		token, err := call.Secret(ctx, "token")
		if err != nil {
			return nil, err
		}
		ce := api.ProviderError(401, "unauthorized", "token %s rejected", token)
		ce.Details.Reason = "sent " + token // provider text in a details string
		return nil, ce
	}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return c.st.machines[id], nil
}

func (c *bareClient) Delete(_ context.Context, call *provider.Call, id string) error {
	c.st.remember(call)
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.st.machines[id] == nil {
		return api.NotFound("machine", id)
	}
	delete(c.st.machines, id)
	return nil
}

type fullClient struct{ bareClient }

func (c *fullClient) Power(_ context.Context, call *provider.Call, id string, action api.PowerAction) error {
	c.st.remember(call)
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	m := c.st.machines[id]
	if m == nil {
		return api.NotFound("machine", id)
	}
	m.State = map[bool]api.MachineState{true: api.StateStopped, false: api.StateRunning}[action == api.ActionOff]
	return nil
}

func (c *fullClient) Reinstall(_ context.Context, call *provider.Call, id, image string) (*api.ExternalMachine, error) {
	c.st.remember(call)
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	m := c.st.machines[id]
	if m == nil {
		return nil, api.NotFound("machine", id)
	}
	m.Name = m.Name + "@" + image
	return m, nil
}

func (c *fullClient) List(_ context.Context, call *provider.Call, cursor string, limit int) ([]api.ExternalMachine, string, error) {
	c.st.remember(call)
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	c.st.lastList = [2]any{cursor, limit}
	if cursor == "" {
		return []api.ExternalMachine{{ID: "a", State: api.StateRunning, Addresses: []string{"10.0.0.1"}}}, "next", nil
	}
	return nil, "", nil
}

// tinyProvider defines a provider called id claiming capabilities, whose
// constructor counts builds and returns a client from client.
func tinyProvider(t *testing.T, id string, capabilities []string, client func(*tinyState) provider.Client) (*provider.Defined, *tinyState) {
	t.Helper()
	st := &tinyState{machines: map[string]*api.ExternalMachine{}}
	d, err := provider.Define(provider.Definition{ID: id, Version: "0.1.0", Provides: []string{api.KindVPS},
		Manifest: tinyManifest, Capabilities: capabilities,
		New: func(bc provider.BuildContext) (provider.Client, error) {
			st.builds.Add(1)
			if st.failBuilds.Add(-1) >= 0 {
				return nil, errors.New("registry down")
			}
			st.failBuilds.Store(0)
			if bc.Account.Config["region"] == nil {
				return nil, errors.New("config without defaults")
			}
			return client(st), nil
		}})
	if err != nil {
		t.Fatalf("define %s: %v", id, err)
	}
	return d, st
}

// fakeSecrets resolves secretRef for tenant acme only.
type fakeSecrets struct{ tenant string }

func (f fakeSecrets) Resolve(_ context.Context, ref string) (string, error) {
	if f.tenant != "acme" || ref != secretRef {
		return "", api.NotFound("secret", ref)
	}
	return tokenValue, nil
}

// serve runs d on its own connection until the test ends.
func serve(t *testing.T, nc *nats.Conn, d *provider.Defined) {
	t.Helper()
	svc, err := provider.Serve(nc, d, provider.ServeOptions{Logger: zerolog.Nop(), Workers: 4,
		Resolver: func(tenant string) provider.SecretResolver { return fakeSecrets{tenant: tenant} }})
	if err != nil {
		t.Fatalf("serve %s: %v", d.ID(), err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func account(id string, version int64) api.ProviderAccount {
	return api.ProviderAccount{ID: id, TenantID: "acme", Version: version, Config: map[string]any{"token": secretRef}}
}

// wantError fails unless err is the ComputeError code/message with details.
func wantError(t *testing.T, err error, code api.Code, message string, details api.ErrorDetails) {
	t.Helper()
	ce := api.AsComputeError(err)
	if ce == nil || ce.Code != code || ce.Message != message || !reflect.DeepEqual(ce.Details, details) {
		t.Fatalf("got %#v, want %s %q %v", ce, code, message, details)
	}
	if strings.Contains(ce.Error(), tokenValue) {
		t.Fatalf("error %q holds the secret value", ce.Error())
	}
}
