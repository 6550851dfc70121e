package natsauth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// publishDenied finds the subject in nats-server's "Permissions Violation
// for Publish to "<subject>"".
var publishDenied = regexp.MustCompile(`Permissions Violation for Publish to "([^"]+)"`)

// Denials turns nats-server's refusal of a publish into an answer: a
// request on a subject the credential may not publish to is dropped by the
// server, which tells the client so asynchronously; without Denials the
// caller would wait out its deadline. Set Handler as the connection's
// error handler (bus.ConnectOptions.ErrorHandler) and send through Call.
type Denials struct {
	mu      sync.Mutex
	waiting map[string][]chan struct{}
}

// Handler is a nats.ErrHandler that wakes the Calls waiting on a subject
// the server refused to take a publish on.
func (d *Denials) Handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	m := publishDenied.FindStringSubmatch(err.Error())
	if m == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ch := range d.waiting[m[1]] {
		close(ch)
	}
	delete(d.waiting, m[1])
}

// wait registers a waiter on subject; done unregisters it.
func (d *Denials) wait(subject string) (denied <-chan struct{}, done func()) {
	ch := make(chan struct{})
	d.mu.Lock()
	if d.waiting == nil {
		d.waiting = map[string][]chan struct{}{}
	}
	d.waiting[subject] = append(d.waiting[subject], ch)
	d.mu.Unlock()
	return ch, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		list := d.waiting[subject]
		for i, c := range list {
			if c == ch {
				d.waiting[subject] = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(d.waiting[subject]) == 0 {
			delete(d.waiting, subject)
		}
	}
}

// Call is bus.Call that answers ACCESS_DENIED as soon as the server refuses
// the publish: for a public verb (compute.v1.<tenant>.<resource>.<verb>)
// naming the scope it needs in details.scope (api.AccessDeniedScope).
// Errors: bus.Call's, and ACCESS_DENIED.
func (d *Denials) Call(ctx context.Context, nc *nats.Conn, subject string, in, out any) error {
	denied, done := d.wait(subject)
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- bus.Call(ctx, nc, subject, in, out) }()
	select {
	case err := <-result:
		return err
	case <-denied:
		// the deferred cancel ends the call at once (result is buffered)
		return DeniedError(subject)
	}
}

// DeniedError is the ACCESS_DENIED of a publish to subject the server
// refused: naming the verb's scope when subject is a public verb (and the
// tenant: a credential of another tenant is refused alike).
func DeniedError(subject string) *api.ComputeError {
	if rest, ok := strings.CutPrefix(subject, bus.PublicRoot+"."); ok {
		if tok := strings.Split(rest, "."); len(tok) == 3 {
			if scope, ok := api.ScopeOf(tok[1], tok[2]); ok {
				e := api.AccessDeniedScope(tok[1], tok[2], scope)
				// a credential of another tenant is refused the same way
				e.Message += fmt.Sprintf(" for tenant %s (or it is a credential of another tenant)", tok[0])
				return e
			}
		}
	}
	return api.Errorf(api.CodeAccessDenied, "this credential may not publish to %s", subject)
}
