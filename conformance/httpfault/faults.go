package httpfault

import (
	"context"
	"time"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
)

var _ conformance.Faults = (*Proxy)(nil)

// opRoute is the dialect route of op (ErrNotSupported for an op the
// dialect has none for).
func (p *Proxy) opRoute(op string) (Route, error) {
	r, ok := p.o.Dialect.Ops[op]
	if !ok {
		return "", conformance.ErrNotSupported
	}
	return r, nil
}

// FailNext implements conformance.Faults: the next n requests of op's
// route answer status with the dialect's error body, without reaching the
// API.
func (p *Proxy) FailNext(_ context.Context, op string, n, status int) error {
	r, err := p.opRoute(op)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.fail[r] = append(p.fail[r], status)
	}
	return nil
}

// DropResponseNext implements conformance.Faults: the next n requests of
// op's route reach the API, and their connection closes without the
// response.
func (p *Proxy) DropResponseNext(_ context.Context, op string, n int) error {
	r, err := p.opRoute(op)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop[r] += n
	return nil
}

// HangNext implements conformance.Faults: the next n requests of op's
// route never reach the API nor answer, until the client gives up.
func (p *Proxy) HangNext(_ context.Context, op string, n int) error {
	r, err := p.opRoute(op)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hang[r] += n
	return nil
}

// SetLatency implements conformance.Faults: every request of op's route
// waits d before it is forwarded (0 removes the delay).
func (p *Proxy) SetLatency(_ context.Context, op string, d time.Duration) error {
	r, err := p.opRoute(op)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency[r] = d
	return nil
}

// FailNextAction implements conformance.Faults: the next request starting
// action reaches the API, and its response is rewritten into a failed
// action (Dialect.FailAction). ErrNotSupported without a route for it.
func (p *Proxy) FailNextAction(_ context.Context, action api.PowerAction) error {
	r, ok := p.o.Dialect.Actions[action]
	if !ok || p.o.Dialect.FailAction == nil {
		return conformance.ErrNotSupported
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.actionFail[r]++
	return nil
}

// RateLimit implements conformance.Faults: until resetAt every request
// of the provider answers 429 (Dialect.RateLimited) without reaching the
// API; the zero time opens the window at once.
func (p *Proxy) RateLimit(_ context.Context, resetAt time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rateUntil = resetAt
	return nil
}

// APICalls implements conformance.Faults: the provider's requests so far
// (hook traffic excluded), answered by the API or by a fault.
func (p *Proxy) APICalls(context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, nil
}
