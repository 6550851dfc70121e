package reconciler

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// createMany creates n instances with 16 concurrent clients.
func (h *harness) createMany(n int, prefix string) []string {
	h.t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var inst api.Instance
			req := api.InstanceCreateRequest{PoolID: h.pool.ID, Flavor: "small", IdempotencyKey: fmt.Sprintf("%s-%d", prefix, i)}
			if err := h.callRetry("create", req, &inst); err != nil {
				errs <- err
				return
			}
			ids[i] = inst.ID
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatalf("create: %v", err)
	}
	return ids
}

// waitAllRunning waits until every id runs, as declared.
func (h *harness) waitAllRunning(ids []string, within time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		bad := h.unconverged(ids, nil, nil)
		if bad == "" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("not converged after %v: %s", within, bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Three reconciler replicas share 1,000 instances: one machine each, every
// create carries the instance's own id as key, everything converges.
func TestThreeReplicasShareAThousandInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 instances")
	}
	const n = 1000
	h := newHarness(t, fastOptions())
	h.startReconciler(h.env.Connect(t))
	h.startReconciler(h.env.Connect(t))
	ids := h.createMany(n, "replicas")
	h.waitAllRunning(ids, 3*time.Minute)

	byKey := h.cloud.ByKey()
	if len(byKey) != n {
		t.Fatalf("provider holds %d machines for %d instances", len(byKey), n)
	}
	live := map[string]bool{}
	for _, id := range ids {
		live[id] = true
	}
	for key := range byKey {
		if !live[key] {
			t.Fatalf("machine made with key %q, not an instance id", key)
		}
	}
	creates := 0
	for _, c := range h.cloud.Log() {
		if c.Verb == provider.VerbCreate {
			creates++
			if !live[c.Target] {
				t.Fatalf("create called with key %q", c.Target)
			}
		}
	}
	t.Logf("%d instances, %d create calls by 3 replicas (%.3f per instance)", n, creates, float64(creates)/n)
}

// During a provider outage every call fails with 503: instances retry with
// exponential backoff, never faster than the policy allows, and converge
// once it ends. In a 429 storm no call for an instance is sent before the
// reset it was given.
func TestOutageAndRateLimitStorm(t *testing.T) {
	o := fastOptions()
	o.Retry = RetryPolicy{Initial: 40 * time.Millisecond, Max: 320 * time.Millisecond, Multiplier: 2, Jitter: 0.2}
	h := newHarness(t, o)

	h.cloud.SetOutage(api.ProviderError(503, "unavailable", "service unavailable"))
	outage := h.createMany(10, "outage")
	for _, id := range outage {
		h.waitFor(id, "retrying", func(i *api.Instance, err error) bool {
			c := providerCondition(i)
			return err == nil && i.Status.Retries >= 4 && c != nil && c.Reason == api.ReasonOf(api.CodeProviderError) && c.RetryAt != nil
		})
	}
	h.cloud.SetOutage(nil)
	h.waitAllRunning(outage, time.Minute)
	for _, id := range outage {
		var at []time.Time
		for _, c := range h.cloud.Log() {
			if c.Verb == provider.VerbCreate && c.Target == id && c.Err != nil {
				at = append(at, c.At)
			}
		}
		for k := 1; k < len(at); k++ {
			floor := time.Duration(float64(min(o.Retry.Initial<<(k-1), o.Retry.Max)) * (1 - o.Retry.Jitter))
			if gap := at[k].Sub(at[k-1]); gap < floor {
				t.Fatalf("%s: retry %d came %v after the previous failure, backoff floor %v", id, k, gap, floor)
			}
		}
	}

	const reset = 800 * time.Millisecond
	storm := make([]error, 10)
	for i := range storm {
		storm[i] = api.RateLimited(reset, "rate limit exceeded")
	}
	h.cloud.FailNext(provider.VerbCreate, storm...)
	limited := h.createMany(10, "storm")
	h.waitAllRunning(limited, time.Minute)
	for _, id := range limited {
		var first, next time.Time
		for _, c := range h.cloud.Log() {
			if c.Verb != provider.VerbCreate || c.Target != id {
				continue
			}
			if first.IsZero() {
				first = c.At
			} else if next.IsZero() {
				next = c.At
			}
		}
		if gap := next.Sub(first); !first.IsZero() && !next.IsZero() && gap < reset {
			t.Fatalf("%s: called again %v after a 429 with reset in %v", id, gap, reset)
		}
	}
}
