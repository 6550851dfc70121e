package hetzner

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// Test fixtures.
const (
	testToken    = "hz-test-token-1f2e3d"
	testTokenRef = "env://HCLOUD_TOKEN"
	testTenant   = "acme"
	testPrefix   = DefaultLabelPrefix
	// testActionDuration is how long every emulated action runs; it equals
	// the poll interval, so a wait costs exactly one poll.
	testActionDuration = time.Second
)

// testStart is a whole second, so RateLimit-Reset (Unix seconds) is exact.
var testStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testSecrets resolves testTokenRef only.
var testSecrets = providertest.Secrets{testTokenRef: testToken}

// env is an emulator and a provider client talking to it.
type env struct {
	srv    *emulator.Server
	emu    *emulator.Emulator
	clock  *clock.Fake // the emulator's clock and the calls': waits advance it
	def    *provider.Defined
	client *client
	log    *bustest.LogBuffer
}

// newEnv starts an emulator (token testToken, fake clock at testStart,
// testActionDuration) and builds a client for it with opts appended.
func newEnv(t testing.TB, opts ...Option) *env {
	t.Helper()
	return newEnvWith(t, emulator.Options{}, opts...)
}

// newEnvWith is newEnv with the emulator's options eo (its token, clock
// and action duration are newEnv's).
func newEnvWith(t testing.TB, eo emulator.Options, opts ...Option) *env {
	t.Helper()
	fake := clock.NewFake(testStart)
	eo.Tokens, eo.ActionDuration, eo.Clock = []string{testToken}, testActionDuration, fake
	srv, err := emulator.Start(eo, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	e := &env{srv: srv, emu: srv.Emulator(), clock: fake, log: &bustest.LogBuffer{}}
	e.def = Definition(append([]Option{WithEndpoint(srv.URL()), WithPollInterval(testActionDuration)}, opts...)...)
	c, err := e.def.New(provider.BuildContext{Account: testAccount()})
	if err != nil {
		t.Fatalf("build client: %v", err)
	}
	e.client = c.(*client)
	return e
}

func testAccount() api.ProviderAccount {
	return api.ProviderAccount{ID: "pacct_01jq7g8v6k5m4n3p2r1s0t9w8x", TenantID: testTenant, Version: 1,
		Config: map[string]any{FieldToken: testTokenRef, FieldLocation: DefaultLocation}}
}

// call is a provider call context for key, logging into e.log.
func (e *env) call(key string) *provider.Call {
	return &provider.Call{IdempotencyKey: key, Account: testAccount(), Clock: e.clock, Secrets: testSecrets,
		Log: zerolog.New(e.log).Level(zerolog.DebugLevel)}
}

// calls is the number of API requests the emulator received since the last
// ResetCalls, all routes together.
func (e *env) calls() int {
	n := 0
	for _, c := range e.emu.CallCounts() {
		n += c
	}
	return n
}

// create creates a cx23 ubuntu-24.04 machine called name for key.
func (e *env) create(t testing.TB, key, name string) *api.ExternalMachine {
	t.Helper()
	return providertest.MustCreate(t, e.client, e.call(key), api.MachineSpec{Name: name, OfferID: "cx23", Image: "ubuntu-24.04"})
}

// mustGet gets id and fails the test on error.
func (e *env) mustGet(t testing.TB, id string) *api.ExternalMachine {
	t.Helper()
	return providertest.MustGet(t, e.client, e.call(""), id)
}

// isKeyLookup matches create's lookup by idempotency key.
func isKeyLookup(req *http.Request) bool {
	return req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/servers") &&
		strings.Contains(req.URL.Query().Get("label_selector"), labelIdempotencyKey)
}
