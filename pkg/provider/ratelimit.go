package provider

import (
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
)

// Reply headers carrying a provider API's rate-limit state (see api.RateLimit).
const (
	HeaderRateLimit     = "Compute-RateLimit-Limit"
	HeaderRateRemaining = "Compute-RateLimit-Remaining"
	HeaderRateRefill    = "Compute-RateLimit-Refill-Per-Second"
	HeaderRateReset     = "Compute-RateLimit-Reset-Ms"
)

// setRateLimitHeaders writes rl into h (ResetAt as Unix milliseconds).
func setRateLimitHeaders(h nats.Header, rl api.RateLimit) {
	h.Set(HeaderRateLimit, strconv.Itoa(rl.Limit))
	h.Set(HeaderRateRemaining, strconv.Itoa(rl.Remaining))
	h.Set(HeaderRateRefill, strconv.FormatFloat(rl.RefillPerSecond, 'g', -1, 64))
	h.Set(HeaderRateReset, strconv.FormatInt(rl.ResetAt.UnixMilli(), 10))
}

// RateLimitFromHeaders reads a rate-limit state from reply headers; ok is
// false when the reply carries none (or a malformed one).
func RateLimitFromHeaders(h nats.Header) (rl api.RateLimit, ok bool) {
	limit, err1 := strconv.Atoi(h.Get(HeaderRateLimit))
	remaining, err2 := strconv.Atoi(h.Get(HeaderRateRemaining))
	refill, err3 := strconv.ParseFloat(h.Get(HeaderRateRefill), 64)
	reset, err4 := strconv.ParseInt(h.Get(HeaderRateReset), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || refill < 0 || remaining < 0 {
		return api.RateLimit{}, false
	}
	return api.RateLimit{Limit: limit, Remaining: remaining, RefillPerSecond: refill, ResetAt: time.UnixMilli(reset)}, true
}
