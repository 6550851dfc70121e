package reconciler

import (
	"math/rand/v2"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
)

// budgets paces calls per provider account from the rate-limit state the
// provider reports on its replies, so a burst of instances on one account
// spends its API budget at the refill rate instead of ending in a 429
// storm, while other accounts are not slowed.
//
// Each account's budget mirrors the provider's token bucket: the last
// reported remaining count, refilled at the reported rate, minus the calls
// started since that report. (golang.org/x/time/rate cannot be told the
// provider's count, which is the authority here.) A share of the limit is
// kept in reserve for the operator's other tools on the same project.
//
// Two facts of the report bound the estimate: the bucket is full at the
// reported reset, and an empty bucket (remaining 0, e.g. on a 429) that is
// a window is closed until that reset. A window answers "0 left, full in
// 20 s" although the rate seen before was far slower (Hetzner's 1 per
// second would need an hour): it does not hand out a request every
// 20 s / limit, it refuses everything until the reset, so nothing is sent
// to a closed account, neither new work nor a resync (see closedUntil). An
// empty bucket whose reset is as far as the rate seen before says (a
// gradual bucket drained: Hetzner's "0 left, full in an hour") is not
// closed for that hour: it refills at that rate, and the reserve rule
// paces the calls as for any other bucket. A first report that is already
// empty has no rate to compare with and counts as a window.
type budgets struct {
	reserve float64
	clock   clock.Clock
	mu      sync.Mutex
	byAcct  map[string]*budget
}

// coldStartCalls bounds the calls in flight to an account whose provider
// has not answered yet: its budget is unknown until the first reply, and a
// burst of 64 workers could spend a small one before that.
const coldStartCalls = 4

type budget struct {
	// reported is false until a reply carried the provider's budget;
	// unpaced is set when a reply came without one (the provider reports
	// none: such accounts are never paced).
	reported, unpaced bool
	inflight          int
	remaining         float64
	refill            float64
	limit             float64
	at                time.Time
	resetAt           time.Time
	taken             float64
	// window is set by an empty report whose implied refill is more than
	// windowRatio times the rate reported before (or that came first):
	// the bucket is closed until resetAt, not refilling.
	window bool
}

// windowRatio is how much faster than the rate seen before an empty
// bucket's implied refill must be to count as a window.
const windowRatio = 2

func newBudgets(reserve float64, c clock.Clock) *budgets {
	return &budgets{reserve: reserve, clock: c, byAcct: map[string]*budget{}}
}

func (b *budgets) get(account string) *budget {
	bg, ok := b.byAcct[account]
	if !ok {
		bg = &budget{}
		b.byAcct[account] = bg
	}
	return bg
}

// observer returns the function that records an account's reported state
// after every provider reply.
func (b *budgets) observer(account string) func(api.RateLimit, bool) {
	return func(rl api.RateLimit, reported bool) {
		b.mu.Lock()
		defer b.mu.Unlock()
		bg := b.get(account)
		if !reported {
			bg.unpaced = !bg.reported
			return
		}
		if rl.Remaining > 0 && bg.closed(b.clock.Now()) {
			// Nothing was sent since the bucket closed: this reply answers
			// a call sent before, and does not reopen it.
			return
		}
		refill := rl.RefillPerSecond
		bg.window = false
		if rl.Remaining < 1 {
			seen := bg.reported && bg.refill > 0
			bg.window = !seen || refill > windowRatio*bg.refill
			if seen && !bg.window {
				refill = bg.refill // a drained gradual bucket refills as before
			}
		}
		bg.reported, bg.unpaced = true, false
		// Passes still in flight may have calls this reply does not count
		// yet (replies also arrive out of order): count them as spent.
		bg.remaining, bg.refill, bg.limit, bg.at, bg.taken = float64(rl.Remaining), refill, float64(rl.Limit), b.clock.Now(), float64(bg.inflight)
		bg.resetAt = rl.ResetAt
	}
}

// take spends one call of account's budget and returns 0, or how long to
// wait before trying again (jittered so waiting instances do not wake
// together): when the budget above the reserve is spent, or, before the
// provider's first reply, when coldStartCalls passes are already in flight.
// A pass that took must call done.
func (b *budgets) take(account string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	bg := b.get(account)
	switch {
	case bg.unpaced:
		bg.inflight++
		return 0
	case !bg.reported:
		if bg.inflight >= coldStartCalls {
			return 50*time.Millisecond + time.Duration(rand.Int64N(int64(100*time.Millisecond)))
		}
		bg.inflight++
		return 0
	}
	available := bg.available(now)
	floor := b.reserve * bg.limit
	if available-1 >= floor {
		bg.taken++
		bg.inflight++
		return 0
	}
	if bg.closed(now) {
		// Wake just after the reset, spread over a second: the bucket is
		// full then, and this pass's call is one of many.
		return bg.resetAt.Sub(now) + time.Duration(rand.Int64N(int64(time.Second)))
	}
	wait := max(bg.resetAt.Sub(now), 100*time.Millisecond)
	if bg.refill > 0 {
		wait = min(wait, time.Duration((floor+1-available)/bg.refill*float64(time.Second)))
	}
	return wait + time.Duration(rand.Int64N(int64(max(wait, time.Second))))
}

// available is how many calls the provider's bucket holds at now beyond
// the ones taken since the last report: nothing while it is closed, else
// the reported remaining count less the calls taken, refilled at the
// reported rate, at most the limit. The calls taken are refilled too: a
// pass that took and then made no call, or whose reply carried no budget,
// must not hold the estimate down until the next report, which then never
// comes (every pass waits, none calls). From the reported reset on, the
// bucket counts as reported full at the reset (roll).
func (bg *budget) available(now time.Time) float64 {
	if bg.closed(now) {
		return 0
	}
	bg.roll(now)
	return min(bg.limit, bg.remaining-bg.taken+bg.refill*max(now.Sub(bg.at), 0).Seconds())
}

// rollWithoutRefill is when a bucket that reports no refill rate is
// assumed to reset again after a reset passed with no report since.
// Guess: no provider here reports a bucket that never refills.
const rollWithoutRefill = time.Minute

// roll turns a reset that has passed into a report: the bucket was full
// (the limit) at the reset, and the calls taken before it are behind it.
// The next reset is when a bucket emptied then would be full again.
func (bg *budget) roll(now time.Time) {
	if now.Before(bg.resetAt) {
		return
	}
	bg.remaining, bg.at, bg.taken, bg.window = bg.limit, bg.resetAt, 0, false
	next := rollWithoutRefill
	if bg.refill > 0 {
		next = time.Duration(bg.limit / bg.refill * float64(time.Second))
	}
	for !now.Before(bg.resetAt) {
		bg.resetAt = bg.resetAt.Add(max(next, time.Second))
	}
}

// closed reports whether the last report said the bucket is an empty
// window and its reset has not come yet.
func (bg *budget) closed(now time.Time) bool {
	return bg.reported && bg.remaining < 1 && bg.window && now.Before(bg.resetAt)
}

// closedUntil returns the reset of account's bucket and true when the
// provider last reported it empty and that reset has not come yet: no
// call to the account may go out before it.
func (b *budgets) closedUntil(account string, now time.Time) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bg := b.byAcct[account]
	if bg == nil || !bg.closed(now) {
		return time.Time{}, false
	}
	return bg.resetAt, true
}

// done ends a pass that took from account's budget.
func (b *budgets) done(account string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bg := b.byAcct[account]; bg != nil && bg.inflight > 0 {
		bg.inflight--
	}
}

// budgetSample is an account's budget as metrics report it.
type budgetSample struct {
	account          string
	remaining, limit float64
}

// samples are the estimated remaining calls and the limit of every
// account whose provider reported a budget, at now (for metrics).
func (b *budgets) samples(now time.Time) []budgetSample {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []budgetSample
	for account, bg := range b.byAcct {
		if bg.reported {
			out = append(out, budgetSample{account, max(bg.available(now), 0), bg.limit})
		}
	}
	return out
}
