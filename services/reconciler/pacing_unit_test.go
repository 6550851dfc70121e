package reconciler

import (
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
)

func TestBudgetRules(t *testing.T) {
	now := time.Now()
	b := newBudgets(0.1, clock.Real{})

	// Before the provider's first reply: at most coldStartCalls in flight.
	for i := range coldStartCalls {
		if w := b.take("cold", now); w != 0 {
			t.Fatalf("cold start call %d waited %v", i, w)
		}
	}
	if w := b.take("cold", now); w <= 0 {
		t.Fatal("a call past the cold-start bound was not held back")
	}
	b.done("cold")
	if w := b.take("cold", now); w != 0 {
		t.Fatalf("a finished call did not free a cold-start slot: %v", w)
	}

	// A provider that reports no budget is never paced.
	b.observer("free")(api.RateLimit{}, false)
	for range 100 {
		if w := b.take("free", now); w != 0 {
			t.Fatalf("unpaced account waited %v", w)
		}
	}

	// A reported budget: 15 of 100 left, 10 % reserved for other tools.
	obs := b.observer("paced")
	obs(api.RateLimit{Limit: 100, Remaining: 15, RefillPerSecond: 1, ResetAt: now.Add(85 * time.Second)}, true)
	sent := 0
	for b.take("paced", now) == 0 {
		sent++
	}
	if sent != 5 { // 15 available, 10 reserved: calls while available-1 >= 10
		t.Fatalf("sent %d calls from 15 remaining with a reserve of 10, want 5", sent)
	}
	// The wait never runs past the reported reset.
	obs(api.RateLimit{Limit: 100, Remaining: 0, RefillPerSecond: 0.001, ResetAt: now.Add(2 * time.Second)}, true)
	if w := b.take("paced", now); w > 4*time.Second {
		t.Fatalf("waited %v although the bucket is full in 2s", w)
	}
}

// The field's reply: a 429 with RateLimit-Remaining 0 and a reset 20 s
// ahead, from which a refill of 180 requests/s follows. Nothing is taken
// until the reset, however fast the estimate refills; at the reset the
// bucket is full.
func TestEmptyBudgetIsClosedUntilReset(t *testing.T) {
	now := time.Now()
	reset := now.Add(20 * time.Second)
	b := newBudgets(0.1, clock.Real{})
	b.observer("hz")(api.RateLimit{Limit: 3600, Remaining: 0, RefillPerSecond: 180, ResetAt: reset}, true)
	// A late reply to a call sent before the 429 does not reopen it.
	b.observer("hz")(api.RateLimit{Limit: 3600, Remaining: 5, RefillPerSecond: 180, ResetAt: reset}, true)
	for _, at := range []time.Duration{0, time.Second, 3 * time.Second, 10 * time.Second, 20*time.Second - time.Millisecond} {
		w := b.take("hz", now.Add(at))
		if w <= 0 || now.Add(at+w).Before(reset) {
			t.Fatalf("at +%v: wait %v, want a wait until the reset (+20s) at least", at, w)
		}
	}
	for i := range 100 {
		if w := b.take("hz", reset); w != 0 {
			t.Fatalf("call %d at the reset waited %v: the bucket is full then", i, w)
		}
	}
}

// A gradual bucket drained (Hetzner: 1 request per second, "0 left, full
// in an hour") is not closed for the hour: it refills at the rate seen
// before, paced by the reserve rule; a window after the same history
// ("0 left, full in 20 s") is closed until its reset.
func TestDrainedGradualBucketIsNotAWindow(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name    string
		reset   time.Duration
		refill  float64
		closed  bool
		maxWait time.Duration
	}{
		{"drained gradual bucket", time.Hour, 1, false, 13 * time.Minute},
		{"window", 20 * time.Second, 180, true, 22 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudgets(0.1, clock.Real{})
			obs := b.observer("hz")
			obs(api.RateLimit{Limit: 3600, Remaining: 100, RefillPerSecond: 1, ResetAt: now.Add(3500 * time.Second)}, true)
			obs(api.RateLimit{Limit: 3600, Remaining: 0, RefillPerSecond: tc.refill, ResetAt: now.Add(tc.reset)}, true)
			if _, closed := b.closedUntil("hz", now); closed != tc.closed {
				t.Fatalf("closed = %v, want %v", closed, tc.closed)
			}
			// The reserve (10 % of 3600) refills at 1/s: about 6 minutes,
			// jittered by up to as much again; never the hour to the reset.
			if w := b.take("hz", now); w <= 0 || w > tc.maxWait || tc.closed && w < tc.reset {
				t.Fatalf("wait %v, want a wait of at most %v", w, tc.maxWait)
			}
		})
	}
}

// Passes that took from the budget and then made no call (or got a reply
// without a budget) do not starve the account: the calls taken refill at
// the reported rate like any spent call, so a pass goes out again without
// waiting for a report that no waiting pass would ever bring.
func TestTakenCallsRefill(t *testing.T) {
	now := time.Now()
	b := newBudgets(0.1, clock.Real{})
	b.observer("hz")(api.RateLimit{Limit: 10, Remaining: 10, RefillPerSecond: 10, ResetAt: now.Add(time.Second)}, true)
	taken := 0
	for b.take("hz", now) == 0 {
		taken++
		b.done("hz") // the pass ended without a call, so without a report
	}
	if taken != 9 { // 10 available, 1 reserved
		t.Fatalf("took %d of 10 with a reserve of 1, want 9", taken)
	}
	later := now.Add(500 * time.Millisecond) // 5 calls refilled
	if w := b.take("hz", later); w != 0 {
		t.Fatalf("half a second after 9 calls on a bucket refilling 10/s: waited %v, want 0", w)
	}
}

// A reset that passed with no report since counts as a report of a full
// bucket: what was taken before it is behind it, and the bucket resets
// again as a bucket emptied then would.
func TestPassedResetRolls(t *testing.T) {
	now := time.Now()
	b := newBudgets(0.1, clock.Real{})
	b.observer("w")(api.RateLimit{Limit: 10, Remaining: 10, ResetAt: now.Add(time.Second)}, true) // no refill rate
	for b.take("w", now) == 0 {
	}
	if w := b.take("w", now); w <= 0 {
		t.Fatal("an account whose budget above the reserve was taken did not wait")
	}
	for i, at := range []time.Time{now.Add(time.Second), now.Add(time.Second + rollWithoutRefill)} {
		if w := b.take("w", at); w != 0 {
			t.Fatalf("reset %d passed: waited %v, want 0", i, w)
		}
		for b.take("w", at) == 0 {
		}
	}
}
