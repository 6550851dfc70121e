package conformance

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// rateLimitWindow is how far ahead fault.rate-limited puts the reset.
const rateLimitWindow = 30 * time.Second

// rateLimitSlack is how far retryAfterMs may be from the reset: the
// RateLimit-Reset header has whole seconds.
const rateLimitSlack = 1500 * time.Millisecond

// inFlightTimeout bounds the create the durable lane kills the provider
// under (its reply may never come).
const inFlightTimeout = 5 * time.Second

// hungDeadline is the caller's deadline of the hung call; the provider
// must answer it within hungGrace after that deadline.
const (
	hungDeadline = 2 * time.Second
	hungGrace    = 3 * time.Second
)

// arm checks the error of a hook call, turning ErrNotSupported into INCOMPLETE and
// other errors into a failure.
func (c *check) arm(what string, err error) {
	if errors.Is(err, ErrNotSupported) {
		c.Incompletef("the subject's hook cannot %s", what)
	}
	if err != nil {
		c.Fatalf("arm fault (%s): %v", what, err)
	}
}

// apiCalls reads the API request counter of the Faults hook.
func (c *check) apiCalls() int {
	n, err := c.r.s.Faults.APICalls(c.ctx)
	c.arm("count API calls", err)
	return n
}

// expectRetryable records a failure unless err is a retryable error.
func (c *check) expectRetryable(what string, err error) {
	switch {
	case err == nil:
		c.Errorf("%s: succeeded, want a retryable error (the caller owns retries)", what)
	case !retryable(err):
		c.Errorf("%s: answered %v, want a retryable error (PROVIDER_ERROR, UNAVAILABLE or RATE_LIMITED)", what, err)
	}
}

// retryCreate creates name, retrying retryable errors a few times.
func (c *check) retryCreate(name string) *api.ExternalMachine {
	var err error
	for range maxTransient {
		var m *api.ExternalMachine
		if m, err = c.create(name); err == nil {
			return m
		}
		if !retryable(err) {
			break
		}
		time.Sleep(max(100*time.Millisecond, api.AsComputeError(err).RetryAfter()))
	}
	c.Fatalf("retried create %s: %v", name, err)
	return nil
}

func faultRateLimited(c *check) {
	f := c.r.s.Faults
	m := c.mustCreate(c.name("m"))
	reset := time.Now().Add(rateLimitWindow)
	c.arm("empty the rate budget", f.RateLimit(c.ctx, reset))
	c.Cleanup(func() {
		if err := f.RateLimit(context.Background(), time.Time{}); err != nil {
			c.Errorf("restore the rate budget: %v", err)
		}
	})
	before := c.apiCalls()
	sent := time.Now()
	_, err := c.get(m.ID)
	answered := time.Now()
	calls := c.apiCalls() - before
	c.Metric("apiCalls", float64(calls))
	if !c.expectCode("get with the rate budget empty", err, api.CodeRateLimited) {
		return
	}
	got := api.AsComputeError(err).RetryAfter()
	c.Metric("retryAfterMs", float64(got.Milliseconds()))
	lo, hi := reset.Sub(answered)-rateLimitSlack, reset.Sub(sent)+rateLimitSlack
	if got < lo || got > hi {
		c.Errorf("retryAfterMs is %d, want the time to the reset, %d..%d", got.Milliseconds(), lo.Milliseconds(), hi.Milliseconds())
	}
	if calls != 1 {
		c.Errorf("the rate-limited get sent %d API requests, want 1 (no retries)", calls)
	}
}

func faultServerError(c *check) {
	name := c.name("m")
	c.arm("fail create requests", c.r.s.Faults.FailNext(c.ctx, provider.VerbCreate, 1, http.StatusServiceUnavailable))
	_, err := c.create(name)
	c.expectRetryable("create while the API answers 503", err)
	m := c.retryCreate(name)
	c.expectOne(m.Name)
}

func faultDropped(c *check) {
	name := c.name("m")
	c.arm("drop create responses", c.r.s.Faults.DropResponseNext(c.ctx, provider.VerbCreate, 1))
	_, err := c.create(name)
	c.expectRetryable("create whose API response was lost", err)
	m := c.retryCreate(name)
	c.expectOne(m.Name)
}

func faultActionFailed(c *check) {
	m := c.runningMachine()
	c.arm("fail the next power-off action", c.r.s.Faults.FailNextAction(c.ctx, api.ActionOff))
	c.expectCode("power off whose action failed", c.power(m.ID, api.ActionOff), api.CodeProviderError)
}

func faultHung(c *check) {
	f := c.r.s.Faults
	m := c.mustCreate(c.name("m"))
	c.arm("hang get requests", f.HangNext(c.ctx, provider.VerbGet, 1))
	deadline := time.Now().Add(hungDeadline)
	replies, at := c.publish(provider.VerbGet, c.machineBody(provider.VerbGet, m.ID), 1, deadline, hungDeadline+hungGrace)
	if len(replies) == 0 {
		c.Errorf("the provider did not end the hung call by its deadline: no reply within %s after it", hungGrace)
	} else {
		c.Metric("repliedAfterDeadlineMs", float64(at[0].Sub(deadline).Milliseconds()))
		c.expectRetryable("get while the API hangs", decodeReply(replies[0], nil))
	}
	got, err := c.get(m.ID)
	if err != nil || got == nil || got.ID != m.ID {
		c.Errorf("get after the hung call answered %v, %v; want machine %s", got, err, m.ID)
	}
}

// inventoryIDs returns the ids of the backend's machines called name.
func (c *check) inventoryIDs(name string) []string {
	ms, err := c.r.s.Inventory.Machines(c.ctx)
	if err != nil {
		c.Fatalf("inventory: %v", err)
	}
	var ids []string
	for _, m := range ms {
		if m.Name == name {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// serviceDown kills the provider service and makes sure it is restarted
// when the behaviour ends; the returned restart brings it back and waits
// until describe answers.
func (c *check) serviceDown() (restart func()) {
	svc := c.r.s.Service
	c.arm("kill the provider service", svc.Kill(c.ctx))
	up := false
	restart = func() {
		if up {
			return
		}
		if err := svc.Restart(context.Background()); err != nil {
			c.Fatalf("restart the provider service: %v", err)
		}
		up = true
		err := c.eventually("the restarted provider to answer describe", func(ctx context.Context) (bool, error) {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := c.remote().Describe(cctx)
			return err == nil, err
		})
		if err != nil {
			c.Fatalf("%v", err)
		}
	}
	c.Cleanup(restart)
	return restart
}

func durableKill(c *check) {
	name := c.name("m")
	c.arm("drop create responses", c.r.s.Faults.DropResponseNext(c.ctx, provider.VerbCreate, 1))
	done := make(chan error, 1)
	go func() { // no cleanup: the create after the restart names the machine
		ctx, cancel := context.WithTimeout(c.ctx, inFlightTimeout)
		defer cancel()
		_, err := c.remote().Create(ctx, c.acct(), name, c.spec(name))
		done <- err
	}()
	var accepted []string
	err := c.eventually("the API to accept the create", func(context.Context) (bool, error) {
		accepted = c.inventoryIDs(name)
		return len(accepted) > 0, nil
	})
	if err != nil {
		c.Fatalf("%v", err)
	}
	restart := c.serviceDown()
	c.Logf("create %s was accepted by the API as machine %v; the provider service was killed", name, accepted)
	if err := <-done; err != nil { // the retry below must find the machine either way
		c.Logf("the create cut off by the kill answered: %v", err)
	}
	restart()
	m := c.retryCreate(name)
	if !slices.Contains(accepted, m.ID) {
		c.Errorf("create after the restart named machine %s, not the accepted %v", m.ID, accepted)
	}
	if ids := c.inventoryIDs(name); len(ids) != 1 {
		c.Errorf("%d machines are called %s, want exactly 1", len(ids), name)
	}
}
