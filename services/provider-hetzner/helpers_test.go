package hetzner

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
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

// stepClock is the call clock of the tests: it shares the emulator's fake
// time and advances it by d whenever a wait asks for After(d), so action
// waits end at once and deterministically.
type stepClock struct{ fake *emulator.FakeClock }

func (c stepClock) Now() time.Time { return c.fake.Now() }

func (c stepClock) After(d time.Duration) <-chan time.Time {
	c.fake.Advance(d)
	ch := make(chan time.Time, 1)
	ch <- c.fake.Now()
	return ch
}

// staticResolver resolves testTokenRef only.
type staticResolver struct{}

func (staticResolver) Resolve(_ context.Context, ref string) (string, error) {
	if ref != testTokenRef {
		return "", api.NotFound("secret", ref)
	}
	return testToken, nil
}

// env is an emulator and a provider client talking to it.
type env struct {
	srv    *emulator.Server
	emu    *emulator.Emulator
	clock  stepClock
	def    *provider.Definition
	client *client
	log    *syncBuffer
}

// newEnv starts an emulator (token testToken, fake clock at testStart,
// testActionDuration) and builds a client for it with opts appended.
func newEnv(t testing.TB, opts ...Option) *env {
	t.Helper()
	fake := emulator.NewFakeClock(testStart)
	srv, err := emulator.Start(emulator.Options{Tokens: []string{testToken}, ActionDuration: testActionDuration, Clock: fake}, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	e := &env{srv: srv, emu: srv.Emulator(), clock: stepClock{fake}, log: &syncBuffer{}}
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
	return &provider.Call{IdempotencyKey: key, Account: testAccount(), Clock: e.clock, Secrets: staticResolver{},
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
	m, err := e.client.Create(context.Background(), e.call(key), api.MachineSpec{Name: name, OfferID: "cx23", Image: "ubuntu-24.04"})
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return m
}

// mustGet gets id and fails the test on error.
func (e *env) mustGet(t testing.TB, id string) *api.ExternalMachine {
	t.Helper()
	m, err := e.client.Get(context.Background(), e.call(""), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return m
}

// wantCode fails the test unless err is a ComputeError with code.
func wantCode(t testing.TB, err error, code api.Code) *api.ComputeError {
	t.Helper()
	if !api.IsCode(err, code) {
		t.Fatalf("error = %v, want %s", err, code)
	}
	return api.AsComputeError(err)
}

// wantProviderError fails the test unless err is PROVIDER_ERROR with
// details {status, code}.
func wantProviderError(t testing.TB, err error, status int, code string) {
	t.Helper()
	ce := wantCode(t, err, api.CodeProviderError)
	if ce.Details[api.DetailStatus] != status || ce.Details[api.DetailCode] != code {
		t.Fatalf("details = %v, want status %d code %q", ce.Details, status, code)
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// barrier is an HTTP transport that holds the replies to requests matching
// match until n of them are answered, then hands them all back: concurrent
// calls then all have their reply to that request before any goes on.
type barrier struct {
	match    func(*http.Request) bool
	n        int
	mu       sync.Mutex
	answered int
	release  chan struct{}
}

func newBarrier(n int, match func(*http.Request) bool) *barrier {
	return &barrier{match: match, n: n, release: make(chan struct{})}
}

func (b *barrier) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !b.match(req) {
		return resp, err
	}
	b.mu.Lock()
	b.answered++
	if b.answered == b.n {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
		return resp, nil
	case <-req.Context().Done():
		_ = resp.Body.Close()
		return nil, req.Context().Err()
	}
}

// isKeyLookup matches create's lookup by idempotency key.
func isKeyLookup(req *http.Request) bool {
	return req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/servers") &&
		strings.Contains(req.URL.Query().Get("label_selector"), labelIdempotencyKey)
}
