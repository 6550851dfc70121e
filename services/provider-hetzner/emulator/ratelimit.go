package emulator

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Defaults of the project-wide rate limit, as documented for the real API.
const (
	DefaultRateLimitSize            = 3600
	DefaultRateLimitRefillPerSecond = 1.0
)

// bucket is the project's token bucket. It is safe for concurrent use.
type bucket struct {
	mu       sync.Mutex
	size     float64
	baseRate float64
	// rate is baseRate, or the faster rate SetRateLimit chose to be full at
	// its resetAt; it returns to baseRate once the bucket is full.
	rate   float64
	tokens float64
	last   time.Time
}

// rateState is what the RateLimit-* headers report.
type rateState struct {
	limit     int
	remaining int
	reset     time.Time
}

// newBucket returns a full bucket.
func newBucket(size int, refillPerSecond float64, now time.Time) *bucket {
	if size <= 0 {
		size = DefaultRateLimitSize
	}
	if refillPerSecond <= 0 {
		refillPerSecond = DefaultRateLimitRefillPerSecond
	}
	return &bucket{
		size: float64(size), baseRate: refillPerSecond, rate: refillPerSecond,
		tokens: float64(size), last: now,
	}
}

// refill adds the tokens earned since the last look. Callers hold b.mu.
func (b *bucket) refill(now time.Time) {
	if !now.After(b.last) {
		return
	}
	b.tokens += b.rate * now.Sub(b.last).Seconds()
	b.last = now
	if b.tokens >= b.size {
		b.tokens, b.rate = b.size, b.baseRate
	}
}

// state reports the bucket. Callers hold b.mu.
func (b *bucket) state(now time.Time) rateState {
	missing := b.size - b.tokens
	return rateState{
		limit:     int(b.size),
		remaining: int(math.Floor(b.tokens)),
		reset:     now.Add(time.Duration(missing / b.rate * float64(time.Second))),
	}
}

// take consumes one token if there is one and reports the state after it.
func (b *bucket) take(now time.Time) (bool, rateState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens < 1 {
		return false, b.state(now)
	}
	b.tokens--
	return true, b.state(now)
}

// peek reports the state without consuming.
func (b *bucket) peek(now time.Time) rateState {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	return b.state(now)
}

// set puts the bucket at remaining tokens, refilling linearly so that it is
// full at resetAt (or at the normal rate if resetAt is not after now).
func (b *bucket) set(remaining int, resetAt, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(max(float64(remaining), 0), b.size)
	b.last = now
	b.rate = b.baseRate
	if left := resetAt.Sub(now).Seconds(); left > 0 && b.tokens < b.size {
		b.rate = (b.size - b.tokens) / left
	}
}

// writeHeaders sets the RateLimit-* headers; Reset is rounded up to whole
// Unix seconds.
func (s rateState) writeHeaders(h http.Header) {
	reset := s.reset.Unix()
	if s.reset.Nanosecond() > 0 {
		reset++
	}
	h.Set("RateLimit-Limit", strconv.Itoa(s.limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(s.remaining))
	h.Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
}
