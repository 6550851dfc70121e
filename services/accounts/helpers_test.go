package accounts_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/accounts"
)

// Tenants of the tests.
const (
	tenant = "t1"
	other  = "t2"
)

// fakeProviderID is the provider the tests serve.
const fakeProviderID = "fake"

// Secrets the fake secrets service knows, one per tenant, and one it does not.
var (
	secretT1      = "secret://" + tenant + "/" + api.NewID(api.PrefixSecret)
	secretT2      = "secret://" + other + "/" + api.NewID(api.PrefixSecret)
	secretMissing = "secret://" + tenant + "/" + api.NewID(api.PrefixSecret)
)

// fakeManifest has a required secret, an option with a default and a nested
// object whose string field's name makes it a secret field.
var fakeManifest = []api.ManifestField{
	{Name: "token", Type: provider.TypeSecret, Required: true},
	{Name: "location", Type: provider.TypeOption, Options: []string{"fsn1", "nbg1"}, Default: "fsn1"},
	{Name: "nested", Type: provider.TypeObject, Fields: []api.ManifestField{
		{Name: "apiKey", Type: provider.TypeString},
		{Name: "endpoint", Type: provider.TypeString},
	}},
}

// fakeOffers are the provider's offers; an account sees those of its location.
var fakeOffers = []api.Offer{
	{ID: "cx22-fsn1", Kind: api.KindVPS, Region: "fsn1", Vcpu: 2, MemoryGiB: 4, Available: true},
	{ID: "cx32-fsn1", Kind: api.KindVPS, Region: "fsn1", Vcpu: 4, MemoryGiB: 8, Available: true},
	{ID: "cx22-nbg1", Kind: api.KindVPS, Region: "nbg1", Vcpu: 2, MemoryGiB: 4, Available: true},
}

// fakeClient lists the offers of the account's location; it makes no machines.
type fakeClient struct{}

func (fakeClient) ListOffers(_ context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	var out []api.Offer
	for _, o := range fakeOffers {
		if o.Region == call.Account.Config["location"] && q.Matches(o) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (fakeClient) Create(context.Context, *provider.Call, api.MachineSpec) (*api.ExternalMachine, error) {
	return nil, api.Errorf(api.CodeUnsupported, "fake provider makes no machines")
}

func (fakeClient) Get(context.Context, *provider.Call, string) (*api.ExternalMachine, error) {
	return nil, nil
}

func (fakeClient) Delete(context.Context, *provider.Call, string) error {
	return api.NotFound("machine", "")
}

// env is a bus with the accounts service, the fake provider and the fake
// secrets check.
type env struct {
	*bustest.Env
}

// start runs everything for t; describeTTL 0 is the service default.
func start(t *testing.T, describeTTL time.Duration) *env {
	t.Helper()
	e := &env{bustest.Start(t)}
	log := zerolog.New(zerolog.NewTestWriter(t))
	def, err := provider.Define(provider.Definition{ID: fakeProviderID, Version: "1.0.0", Provides: []string{api.KindVPS},
		Manifest: fakeManifest, New: func(provider.BuildContext) (provider.Client, error) { return fakeClient{}, nil }})
	if err != nil {
		t.Fatalf("define fake provider: %v", err)
	}
	// The provider and the secrets check answer on their own connections,
	// flushed so that their subscriptions are live before the first request.
	provNC, secretsNC := e.Connect(t), e.Connect(t)
	prov, err := provider.Serve(provNC, def, provider.ServeOptions{Logger: log})
	if err != nil {
		t.Fatalf("serve fake provider: %v", err)
	}
	t.Cleanup(func() { _ = prov.Stop() })
	serveSecretsCheck(t, secretsNC)
	for _, nc := range []*nats.Conn{provNC, secretsNC} {
		if err := nc.Flush(); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
	svc, err := accounts.Start(e.NC, e.Stores, accounts.Options{Logger: log, DescribeTTL: describeTTL, Providers: []string{fakeProviderID, "absent"}})
	if err != nil {
		t.Fatalf("start accounts: %v", err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return e
}

// serveSecretsCheck answers bus.SecretsCheck like the secrets service does.
func serveSecretsCheck(t *testing.T, nc *nats.Conn) {
	t.Helper()
	_, err := nc.Subscribe(bus.SecretsCheck, func(m *nats.Msg) {
		var in api.SecretResolveRequest
		fail := api.Errorf(api.CodeInvalidInput, "malformed check request")
		if json.Unmarshal(m.Data, &in) == nil {
			fail = checkRef(in)
		}
		reply := []byte("{}")
		if fail != nil {
			_, _, reply = bus.EncodeError(fail)
		}
		_ = m.Respond(reply)
	})
	if err != nil {
		t.Fatalf("serve secrets check: %v", err)
	}
}

// checkRef is ACCESS_DENIED for another tenant's secret, NOT_FOUND for an
// unknown one, INVALID_INPUT for vault:// (no store configured here), nil
// for env:// (configured) and known secrets.
func checkRef(in api.SecretResolveRequest) *api.ComputeError {
	ref, err := api.ParseSecretRef(in.Ref)
	switch {
	case err != nil:
		return api.AsComputeError(err)
	case ref.Scheme == api.SchemeVault:
		return api.InvalidInput("ref", "no secret store is configured for vault:// references")
	case ref.Scheme == api.SchemeSecret && ref.Tenant != in.TenantID:
		return api.Errorf(api.CodeAccessDenied, "secret of another tenant")
	case ref.Scheme == api.SchemeSecret && in.Ref != secretT1 && in.Ref != secretT2:
		return api.NotFound("secret", ref.ID)
	}
	return nil
}

// call sends in (a []byte or a string is sent as is) on the command subject
// and decodes the reply into a T; it returns the ComputeError of a failure.
func call[T any](t *testing.T, nc *nats.Conn, tnt, resource, verb string, in any) (T, *api.ComputeError) {
	t.Helper()
	if s, ok := in.(string); ok {
		in = []byte(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out T
	err := bus.Call(ctx, nc, bus.Command(tnt, resource, verb), in, &out)
	if err == nil {
		return out, nil
	}
	return out, api.AsComputeError(err)
}

// must is call that fails the test on an error.
func must[T any](t *testing.T, nc *nats.Conn, resource, verb string, in any) T {
	t.Helper()
	out, err := call[T](t, nc, tenant, resource, verb, in)
	if err != nil {
		t.Fatalf("%s.%s: %v (details %v)", resource, verb, err, err.Details)
	}
	return out
}

// wantErr fails unless err has code and details.path.
func wantErr(t *testing.T, err *api.ComputeError, code api.Code, path string) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("got success, want %s at %q", code, path)
	case err.Code != code || err.Path() != path:
		t.Fatalf("got %s at %q (%s), want %s at %q", err.Code, err.Path(), err.Message, code, path)
	}
}

// countKeys is the number of keys of every test tenant in kv.
func countKeys(t *testing.T, kv jetstream.KeyValue) int {
	t.Helper()
	n := 0
	for _, tnt := range []string{tenant, other} {
		keys, err := bus.NewTable[struct{}](kv, "record").Keys(context.Background(), tnt)
		if err != nil {
			t.Fatalf("keys: %v", err)
		}
		n += len(keys)
	}
	return n
}

// createAccount makes an account of the test tenant with its secret, at
// location ("" for the default).
func createAccount(t *testing.T, e *env, name, location string) api.Account {
	t.Helper()
	config := map[string]any{"token": secretT1}
	if location != "" {
		config["location"] = location
	}
	a := must[api.Account](t, e.NC, bus.ResourceAccounts, "create", map[string]any{
		"provider": fakeProviderID, "name": name, "config": config})
	if !strings.HasPrefix(a.ID, api.PrefixAccount) {
		t.Fatalf("account id %q lacks prefix %s", a.ID, api.PrefixAccount)
	}
	return a
}

// createPool makes a pool on account with one flavor per offer id.
func createPool(t *testing.T, e *env, accountID string, offerIDs ...string) api.Pool {
	t.Helper()
	var flavors []api.Flavor
	for i, id := range offerIDs {
		flavors = append(flavors, api.Flavor{Name: "f" + string(rune('a'+i)), OfferID: id})
	}
	return must[api.Pool](t, e.NC, bus.ResourcePools, "create", api.PoolCreateRequest{
		Class: api.PoolClassProvider, ProviderAccountID: accountID, Agent: api.PoolAgentNone, Flavors: flavors})
}
