package reconciler

import (
	"math/rand/v2"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
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
type budgets struct {
	reserve float64
	mu      sync.Mutex
	byAcct  map[string]*budget
}

type budget struct {
	remaining float64
	refill    float64
	limit     float64
	at        time.Time
	taken     float64
}

func newBudgets(reserve float64) *budgets {
	return &budgets{reserve: reserve, byAcct: map[string]*budget{}}
}

// observer returns the function that records an account's reported state.
func (b *budgets) observer(account string) func(api.RateLimit) {
	return func(rl api.RateLimit) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.byAcct[account] = &budget{remaining: float64(rl.Remaining), refill: rl.RefillPerSecond, limit: float64(rl.Limit), at: time.Now()}
	}
}

// take spends one call of account's budget and returns 0, or, when the
// budget (above the reserve) is spent, how long to wait before trying again
// (jittered so waiting instances do not wake together). Accounts whose
// provider reports nothing are not paced.
func (b *budgets) take(account string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	bg, ok := b.byAcct[account]
	if !ok {
		return 0
	}
	available := min(bg.limit, bg.remaining+bg.refill*now.Sub(bg.at).Seconds()) - bg.taken
	floor := b.reserve * bg.limit
	if available-1 >= floor {
		bg.taken++
		return 0
	}
	if bg.refill <= 0 {
		return time.Second + time.Duration(rand.Int64N(int64(time.Second)))
	}
	wait := time.Duration((floor + 1 - available) / bg.refill * float64(time.Second))
	return wait + time.Duration(rand.Int64N(int64(max(wait, time.Second))))
}
