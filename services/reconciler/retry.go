package reconciler

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// RetryPolicy is the exponential backoff of retryable failures.
type RetryPolicy struct {
	// Initial delay after the first failure (default 1 s).
	Initial time.Duration
	// Max caps a delay (default 5 min).
	Max time.Duration
	// Multiplier grows the delay per failure (default 2).
	Multiplier float64
	// Jitter randomises each delay by ±Jitter (default 0.2; 0 < Jitter < 1).
	Jitter float64
}

func (p *RetryPolicy) defaults() {
	if p.Initial <= 0 {
		p.Initial = time.Second
	}
	if p.Max <= 0 {
		p.Max = 5 * time.Minute
	}
	if p.Multiplier < 1 {
		p.Multiplier = 2
	}
	if p.Jitter <= 0 || p.Jitter >= 1 {
		p.Jitter = 0.2
	}
}

// Delay is the wait before retry number attempt (1 for the first retry):
// exponential with jitter (cenkalti/backoff), never less than retryAfter
// (a provider's rate-limit reset).
func (p RetryPolicy) Delay(attempt int, retryAfter time.Duration) time.Duration {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(p.Initial), backoff.WithMaxInterval(p.Max),
		backoff.WithMultiplier(p.Multiplier), backoff.WithRandomizationFactor(p.Jitter),
		backoff.WithMaxElapsedTime(0))
	d := b.NextBackOff()
	for i := 1; i < attempt && d < p.Max; i++ {
		d = b.NextBackOff()
	}
	return max(min(d, p.Max), retryAfter)
}
