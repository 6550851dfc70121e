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
//
// It refills at baseRate, except while a window set by SetRateLimit is
// closed: then it keeps what it holds until closedUntil and is full from
// then on.
type bucket struct {
	mu       sync.Mutex
	size     float64
	baseRate float64
	tokens   float64
	last     time.Time
	// closedUntil is the reset of the window SetRateLimit closed (zero
	// when none is).
	closedUntil time.Time
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
	return &bucket{size: float64(size), baseRate: refillPerSecond, tokens: float64(size), last: now}
}

// refill adds the tokens earned since the last look: none while a window
// is closed, all of them when it opens. Callers hold b.mu.
func (b *bucket) refill(now time.Time) {
	if !now.After(b.last) {
		return
	}
	switch {
	case b.closedUntil.IsZero():
		b.tokens = min(b.size, b.tokens+b.baseRate*now.Sub(b.last).Seconds())
	case !now.Before(b.closedUntil):
		b.tokens, b.closedUntil = b.size, time.Time{}
	}
	b.last = now
}

// state reports the bucket; its reset is when it is full again (the end of
// a closed window). Callers hold b.mu.
func (b *bucket) state(now time.Time) rateState {
	reset := b.closedUntil
	if reset.IsZero() {
		reset = now.Add(time.Duration((b.size - b.tokens) / b.baseRate * float64(time.Second)))
	}
	return rateState{limit: int(b.size), remaining: int(math.Floor(b.tokens)), reset: reset}
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

// set puts the bucket at remaining tokens and, if resetAt is after now,
// closes a window until resetAt: no refill before it, full at it.
// Otherwise it refills at the normal rate.
//
// Guess: the documentation describes a gradual refill (1 request per
// second), which cannot answer RateLimit-Remaining 0 with a RateLimit-Reset
// 20 s away; such replies were seen in the field (issue 11), and requests
// sent before that reset were refused. The emulator models them as a
// window that stays closed until its reset.
func (b *bucket) set(remaining int, resetAt, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(max(float64(remaining), 0), b.size)
	b.last = now
	b.closedUntil = time.Time{}
	if resetAt.After(now) && b.tokens < b.size {
		b.closedUntil = resetAt
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
