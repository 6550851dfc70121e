package emulator

import (
	"time"

	"better-compute.io/compute/pkg/clock"
)

// Route classes of the hourly request limits (docs, "Request limit" of
// each endpoint), the keys of Options.Limits.
const (
	LimitServer    = "server"     // GET /server, GET/POST /server/{n}: 200/h
	LimitResetGet  = "reset-get"  // GET /reset/{n}: 500/h
	LimitResetPost = "reset-post" // POST /reset/{n}: 50/h
	LimitBoot      = "boot"       // GET/POST/DELETE /boot/{n}/rescue: 500/h
	LimitKeyGet    = "key-get"    // GET /key, GET /key/{fp}: 500/h
	LimitKeyWrite  = "key-write"  // POST /key, POST/DELETE /key/{fp}: 200/h
	// LimitOrder: GET /order/server/product[/{id}]. Guess: 500/h, as the
	// other read endpoints (the docs' figure was not checked).
	LimitOrder = "order"
)

// documentedLimits are the real API's limits per hour.
var documentedLimits = map[string]int{LimitServer: 200, LimitResetGet: 500, LimitResetPost: 50,
	LimitBoot: 500, LimitKeyGet: 500, LimitKeyWrite: 200, LimitOrder: 500}

// LimitInterval is the window of every limit (the error's "interval", s).
const LimitInterval = time.Hour

// Login block: BadLoginLimit failed logins from one address block it for
// BlockDuration (Hetzner's Robot docs: 3 failed logins, 10 minutes).
const (
	BadLoginLimit = 3
	BlockDuration = 10 * time.Minute
)

// limiter counts requests per route class in fixed windows.
//
// Guess: the windows are fixed, starting at a class's first request, and
// count per account (the docs say neither; the error only gives
// max_request and interval).
type limiter struct {
	clock  clock.Clock
	limits map[string]int
	window map[string]*window
}

type window struct {
	start time.Time
	n     int
}

func newLimiter(c clock.Clock, override map[string]int) *limiter {
	l := &limiter{clock: c, limits: map[string]int{}, window: map[string]*window{}}
	for k, v := range documentedLimits {
		l.limits[k] = v
	}
	for k, v := range override {
		l.limits[k] = v
	}
	return l
}

// take counts one request of class; false (and the limit) when the
// class's window is spent. Callers hold the emulator's mu.
func (l *limiter) take(class string) (bool, int) {
	limit, ok := l.limits[class]
	if !ok {
		return true, 0
	}
	now := l.clock.Now()
	w := l.window[class]
	if w == nil || now.Sub(w.start) >= LimitInterval {
		w = &window{start: now}
		l.window[class] = w
	}
	if w.n >= limit {
		return false, limit
	}
	w.n++
	return true, limit
}

// loginState is the failed logins of one client address.
type loginState struct {
	failures     int
	blockedUntil time.Time
}
