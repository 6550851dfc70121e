package fake

import (
	"context"
	"sync"
	"time"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
)

// faultLayer is the "API boundary" of an in-process provider without an
// HTTP API (memory): every client call passes it, is counted as one API
// request, and meets the faults armed through conformance.Faults. It is
// safe for concurrent use.
type faultLayer struct {
	mu         sync.Mutex
	calls      int
	fail       map[string][]int // op → statuses of the next requests
	drop       map[string]int
	hang       map[string]int
	latency    map[string]time.Duration
	actionFail map[api.PowerAction]int
	rateUntil  time.Time
}

func newFaultLayer() *faultLayer {
	return &faultLayer{fail: map[string][]int{}, drop: map[string]int{}, hang: map[string]int{},
		latency: map[string]time.Duration{}, actionFail: map[api.PowerAction]int{}}
}

// FailNext implements conformance.Faults: 429 is RATE_LIMITED (1 s), any
// other status PROVIDER_ERROR with it.
func (l *faultLayer) FailNext(_ context.Context, op string, n, status int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		l.fail[op] = append(l.fail[op], status)
	}
	return nil
}

// DropResponseNext implements conformance.Faults: the call runs, then
// answers PROVIDER_ERROR as if its reply was lost.
func (l *faultLayer) DropResponseNext(_ context.Context, op string, n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop[op] += n
	return nil
}

// HangNext implements conformance.Faults: the call waits for its context.
func (l *faultLayer) HangNext(_ context.Context, op string, n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hang[op] += n
	return nil
}

// SetLatency implements conformance.Faults.
func (l *faultLayer) SetLatency(_ context.Context, op string, d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latency[op] = d
	return nil
}

// FailNextAction implements conformance.Faults: the next power action (or
// reinstall) does nothing and answers PROVIDER_ERROR.
func (l *faultLayer) FailNextAction(_ context.Context, action api.PowerAction) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.actionFail[action]++
	return nil
}

// RateLimit implements conformance.Faults: until resetAt every call
// answers RATE_LIMITED with the time left.
func (l *faultLayer) RateLimit(_ context.Context, resetAt time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rateUntil = resetAt
	return nil
}

// APICalls implements conformance.Faults.
func (l *faultLayer) APICalls(context.Context) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls, nil
}

// enter counts one request of op and applies its faults: it reports
// whether the response must be lost, or the error the request answers.
func (l *faultLayer) enter(ctx context.Context, op string) (lost bool, err error) {
	l.mu.Lock()
	l.calls++
	if left := time.Until(l.rateUntil); left > 0 {
		l.mu.Unlock()
		return false, api.RateLimited(left, "rate limit exceeded")
	}
	hang := l.hang[op] > 0
	if hang {
		l.hang[op]--
	}
	delay := l.latency[op]
	status := 0
	if q := l.fail[op]; len(q) > 0 {
		status, l.fail[op] = q[0], q[1:]
	}
	if lost = status == 0 && l.drop[op] > 0; lost {
		l.drop[op]--
	}
	l.mu.Unlock()
	if hang {
		<-ctx.Done()
		return false, api.Errorf(api.CodeUnavailable, "the API did not answer: %v", ctx.Err())
	}
	if delay > 0 {
		if err := provider.Sleep(ctx, clock.Real{}, delay); err != nil {
			return false, err
		}
	}
	switch {
	case status == 429:
		return false, api.RateLimited(time.Second, "rate limit exceeded")
	case status != 0:
		return false, api.ProviderError(status, "injected", "the API answered %d", status)
	}
	return lost, nil
}

// action pops an armed failure of action.
func (l *faultLayer) action(action api.PowerAction) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.actionFail[action] == 0 {
		return nil
	}
	l.actionFail[action]--
	return api.ProviderError(200, "action_failed", "the %s action failed", action)
}

// errLost is the error of a call whose response was lost.
func errLost() error {
	return api.ProviderError(0, "unreachable", "the API's response was lost")
}

// full is a client with every capability.
type full interface {
	provider.Client
	provider.Powerer
	provider.Reinstaller
	provider.Lister
	provider.KeyDeleter
	provider.Relabeler
	provider.Resizer
	provider.MetricsReader
}

// layered is a client behind the fault layer.
type layered struct {
	inner full
	l     *faultLayer
}

var _ conformance.Faults = (*faultLayer)(nil)

func (c layered) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	lost, err := c.l.enter(ctx, provider.VerbOffers)
	if err != nil {
		return nil, err
	}
	out, err := c.inner.ListOffers(ctx, call, q)
	return lostOr(lost, out, err)
}

func (c layered) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	lost, err := c.l.enter(ctx, provider.VerbCreate)
	if err != nil {
		return nil, err
	}
	out, err := c.inner.Create(ctx, call, spec)
	return lostOr(lost, out, err)
}

func (c layered) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	lost, err := c.l.enter(ctx, provider.VerbGet)
	if err != nil {
		return nil, err
	}
	out, err := c.inner.Get(ctx, call, id)
	return lostOr(lost, out, err)
}

func (c layered) Delete(ctx context.Context, call *provider.Call, id string) error {
	lost, err := c.l.enter(ctx, provider.VerbDelete)
	if err != nil {
		return err
	}
	_, err = lostOr(lost, struct{}{}, c.inner.Delete(ctx, call, id))
	return err
}

func (c layered) DeleteByKey(ctx context.Context, call *provider.Call, key string) error {
	lost, err := c.l.enter(ctx, provider.VerbDelete)
	if err != nil {
		return err
	}
	_, err = lostOr(lost, struct{}{}, c.inner.DeleteByKey(ctx, call, key))
	return err
}

func (c layered) Power(ctx context.Context, call *provider.Call, id string, action api.PowerAction) error {
	lost, err := c.l.enter(ctx, provider.VerbPower)
	if err != nil {
		return err
	}
	if err := c.l.action(action); err != nil {
		return err
	}
	_, err = lostOr(lost, struct{}{}, c.inner.Power(ctx, call, id, action))
	return err
}

func (c layered) Reinstall(ctx context.Context, call *provider.Call, id, image string) (*api.ExternalMachine, error) {
	lost, err := c.l.enter(ctx, provider.VerbReinstall)
	if err != nil {
		return nil, err
	}
	if err := c.l.action(api.ActionReinstall); err != nil {
		return nil, err
	}
	out, err := c.inner.Reinstall(ctx, call, id, image)
	return lostOr(lost, out, err)
}

func (c layered) Relabel(ctx context.Context, call *provider.Call, id string, labels map[string]string) (*api.ExternalMachine, error) {
	lost, err := c.l.enter(ctx, provider.VerbRelabel)
	if err != nil {
		return nil, err
	}
	out, err := c.inner.Relabel(ctx, call, id, labels)
	return lostOr(lost, out, err)
}

func (c layered) List(ctx context.Context, call *provider.Call, cursor string, limit int) ([]api.ExternalMachine, string, error) {
	lost, err := c.l.enter(ctx, provider.VerbList)
	if err != nil {
		return nil, "", err
	}
	items, next, err := c.inner.List(ctx, call, cursor, limit)
	if lost && err == nil {
		return nil, "", errLost()
	}
	return items, next, err
}

func (c layered) Resize(ctx context.Context, call *provider.Call, req api.ProviderResizeRequest) (*api.ResizeResult, error) {
	lost, err := c.l.enter(ctx, provider.VerbResize)
	if err != nil {
		return nil, err
	}
	out, err := c.inner.Resize(ctx, call, req)
	return lostOr(lost, out, err)
}

func (c layered) Metrics(ctx context.Context, call *provider.Call, id string, w api.MetricsWindow) (*api.Metrics, error) {
	lost, err := c.l.enter(ctx, provider.VerbMetrics)
	if err != nil {
		return nil, err
	}
	out, err := c.inner.Metrics(ctx, call, id, w)
	return lostOr(lost, out, err)
}

// lostOr is the outcome of a call that ran: errLost when its response was
// lost, else out and err.
func lostOr[T any](lost bool, out T, err error) (T, error) {
	if lost && err == nil {
		var zero T
		return zero, errLost()
	}
	return out, err
}
