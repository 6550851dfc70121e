package hetzner

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// heldClock is a fake clock whose waits end only when the test releases
// them: a batch is then sent when it is full, or when the test says.
type heldClock struct {
	*clock.Fake
	release chan time.Time
}

func (c heldClock) After(time.Duration) <-chan time.Time { return c.release }

// getAll gets every machine concurrently, each with its own key, on clk,
// and fails the test unless each comes back running.
func getAll(t *testing.T, e *env, clk clock.Clock, machines map[string]*api.ExternalMachine) {
	t.Helper()
	var wg sync.WaitGroup
	for key, m := range machines {
		wg.Go(func() {
			call := e.call(key)
			call.Clock = clk
			got, err := e.client.Get(t.Context(), call, m.ID)
			if err != nil || got == nil || got.ID != m.ID || got.IdempotencyKey != key || got.State != api.StateRunning {
				t.Errorf("get %s (%s): %+v, %v", m.ID, key, got, err)
			}
		})
	}
	wg.Wait()
}

// createN makes n servers (first attempts), lets their actions end and
// returns them by key.
func createN(t *testing.T, e *env, n int) map[string]*api.ExternalMachine {
	t.Helper()
	out := make(map[string]*api.ExternalMachine, n)
	for i := range n {
		key := fmt.Sprintf("inst_batch_%03d", i)
		call := e.call(key)
		call.FirstAttempt = true
		m, err := e.client.Create(t.Context(), call, api.MachineSpec{Name: key, OfferID: "cx23", Image: "ubuntu-24.04"})
		if err != nil {
			t.Fatal(err)
		}
		out[key] = m
	}
	e.clock.Advance(testActionDuration)
	return out
}

// Concurrent gets of one account share list pages: 100 gets cost 2
// requests (two full batches of 50, sent without waiting for the window),
// and no GET /servers/{id}. With batching off the same gets cost 100.
func TestConcurrentGetsShareListPages(t *testing.T) {
	e := newEnv(t)
	machines := createN(t, e, 100)
	held := heldClock{Fake: e.clock, release: make(chan time.Time)}
	e.emu.ResetCalls()
	getAll(t, e, held, machines)
	if lists, gets := e.emu.Calls("GET /servers"), e.emu.Calls("GET /servers/{id}"); lists != 2 || gets != 0 {
		t.Fatalf("100 concurrent gets sent %d lists and %d gets, want 2 and 0", lists, gets)
	}

	off := newEnv(t, WithBatchWindow(0))
	machines = createN(t, off, 100)
	off.emu.ResetCalls()
	getAll(t, off, off.clock, machines)
	if lists, gets := off.emu.Calls("GET /servers"), off.emu.Calls("GET /servers/{id}"); lists != 0 || gets != 100 {
		t.Fatalf("unbatched: %d lists and %d gets, want 0 and 100", lists, gets)
	}
}

// A lone get waits the window and costs one request, as before: a
// first-attempt create→running is still 2 (POST, one list).
func TestLoneGetCostsOneRequest(t *testing.T) {
	e := newEnv(t)
	machines := createN(t, e, 1)
	e.emu.ResetCalls()
	getAll(t, e, e.clock, machines)
	if n := e.calls(); n != 1 || e.emu.Calls("GET /servers") != 1 {
		t.Fatalf("a lone get sent %d requests (%v), want one list", n, e.emu.CallCounts())
	}
}

// A list that lags the truth never makes a fresh server look missing: the
// server it leaves out is asked for alone and found. A server that really
// is gone is absent.
func TestLaggingListDoesNotHideAFreshServer(t *testing.T) {
	e := newEnvWith(t, emulator.Options{ListLag: time.Minute})
	machines := createN(t, e, 1)
	e.emu.ResetCalls()
	getAll(t, e, e.clock, machines)
	if lists, gets := e.emu.Calls("GET /servers"), e.emu.Calls("GET /servers/{id}"); lists != 1 || gets != 1 {
		t.Fatalf("sent %d lists and %d gets, want the list, then the server alone", lists, gets)
	}
	for key, m := range machines {
		id, _ := parseServerID(m.ID)
		e.emu.DeleteServerOutOfBand(id)
		if got, err := e.client.Get(t.Context(), e.call(key), m.ID); got != nil || err != nil {
			t.Fatalf("get of a deleted server: %+v, %v; want absent", got, err)
		}
	}
}

// A get for a key whose id now names another key's server finds nothing
// in the batch and asks for the server alone: it answers it as it is, and
// Serve answers absent (see provider.Client).
func TestBatchedGetOfAnotherKeysServer(t *testing.T) {
	e := newEnv(t)
	machines := createN(t, e, 1)
	for _, m := range machines {
		got, err := e.client.Get(t.Context(), e.call("inst_other"), m.ID)
		if err != nil || got == nil || got.IdempotencyKey == "inst_other" {
			t.Fatalf("get with another key: %+v, %v; want the server with its own key", got, err)
		}
	}
}

// A failed batch answers every get of it with the failure: a 429 is
// RATE_LIMITED for each, and nothing was executed.
func TestBatchFailureAnswersEveryGet(t *testing.T) {
	e := newEnv(t)
	machines := createN(t, e, 50)
	e.emu.FailNext("GET /servers", 1, 429, "rate_limit_exceeded", "limit")
	var wg sync.WaitGroup
	for key, m := range machines {
		wg.Go(func() {
			call := e.call(key)
			call.Clock = heldClock{Fake: e.clock}
			_, err := e.client.Get(t.Context(), call, m.ID)
			if ce := api.AsComputeError(err); ce.Code != api.CodeRateLimited || !ce.NotExecuted() {
				t.Errorf("get %s: %v, want RATE_LIMITED, not executed", m.ID, err)
			}
		})
	}
	wg.Wait()
}

// Concurrent power waits of one account share their action polls: 25
// power-offs poll GET /actions a few times in all, not once each per poll
// interval (real clock: the emulator's actions end on their own).
func TestConcurrentPowerWaitsSharePolls(t *testing.T) {
	srv, err := emulator.Start(emulator.Options{Tokens: []string{testToken}, ActionDuration: 300 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	def := Definition(WithEndpoint(srv.URL()), WithPollInterval(100*time.Millisecond), WithBatchWindow(time.Second))
	built, err := def.New(provider.BuildContext{Account: testAccount()})
	if err != nil {
		t.Fatal(err)
	}
	c := built.(*client)
	ids := srv.Emulator().SeedServers(maxActionIDs, "pw", map[string]string{testPrefix + "/managed": "true"})
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			call := &provider.Call{Account: testAccount(), Clock: clock.Real{}, Secrets: testSecrets}
			if err := c.Power(t.Context(), call, fmt.Sprint(id), api.ActionOff); err != nil {
				t.Errorf("power off %d: %v", id, err)
			}
		})
	}
	wg.Wait()
	polls := srv.Emulator().Calls("GET /actions")
	t.Logf("%d power-offs of 300 ms polled every 100 ms: %d GET /actions", len(ids), polls)
	if polls == 0 || polls > 6 {
		t.Fatalf("%d concurrent waits sent %d action polls, want a few shared ones (each full batch is sent at once)", len(ids), polls)
	}
}

// While the project's budget is plentiful a batch waits the configured
// window; once less than half is left it waits for batchShare requests to
// refill, at most maxBatchWindow: at 20 per second 1.25 s, at Hetzner's 1
// per second the cap.
func TestBatchWindowFollowsTheBudget(t *testing.T) {
	e := newEnv(t)
	if w := e.client.batchWindow(); w != DefaultBatchWindow {
		t.Fatalf("no budget seen: window %s, want %s", w, DefaultBatchWindow)
	}
	for _, c := range []struct {
		remaining int
		refill    float64
		want      time.Duration
	}{
		{3000, 1, DefaultBatchWindow},
		{1000, 20, 1250 * time.Millisecond},
		{1000, 1, maxBatchWindow},
		{0, 1000, DefaultBatchWindow},
	} {
		e.client.budget.set(api.RateLimit{Limit: 3600, Remaining: c.remaining, RefillPerSecond: c.refill})
		if w := e.client.batchWindow(); w != c.want {
			t.Errorf("%d left, %.0f/s: window %s, want %s", c.remaining, c.refill, w, c.want)
		}
	}
	// a reply's budget is what the client keeps
	e.create(t, "inst_budget", "inst-budget")
	if rl, ok := e.client.budget.get(); !ok || rl.Limit != emulator.DefaultRateLimitSize {
		t.Fatalf("budget after a create: %+v, %v", rl, ok)
	}
}
