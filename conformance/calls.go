package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// callCtx bounds one provider call by the run's call timeout.
func (c *check) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.r.opts.CallTimeout)
}

// remote is the provider on the bus.
func (c *check) remote() provider.Remote { return c.r.remote }

// acct is the subject's account.
func (c *check) acct() api.ProviderAccount { return c.r.s.Account }

// spec is the machine spec of name with the subject's offer and image.
func (c *check) spec(name string) api.MachineSpec {
	return api.MachineSpec{Name: name, OfferID: c.r.s.OfferID, Image: c.r.s.Image}
}

// create asks for the machine of name (its own idempotency key) and, on
// success, registers its deletion as a cleanup.
func (c *check) create(name string) (*api.ExternalMachine, error) {
	ctx, cancel := c.callCtx()
	defer cancel()
	m, err := c.remote().Create(ctx, c.acct(), name, c.spec(name))
	if err != nil {
		return nil, err
	}
	c.cleanupMachine(m.ID)
	return m, nil
}

// mustCreate is create, stopping the behaviour when it fails or answers a
// machine without an id.
func (c *check) mustCreate(name string) *api.ExternalMachine {
	m, err := c.create(name)
	if err != nil {
		c.Fatalf("create %s: %v", name, err)
	}
	if m.ID == "" {
		c.Fatalf("create %s answered a machine without an id", name)
	}
	return m
}

// cleanupMachine deletes machine id when the behaviour ends (once per id).
func (c *check) cleanupMachine(id string) {
	c.r.cleanupOnce(c, id, func() {
		if err := c.r.removeMachine(context.Background(), id); err != nil {
			c.Logf("cleanup of machine %s: %v", id, err)
		}
	})
}

// get returns the machine (nil when absent).
func (c *check) get(id string) (*api.ExternalMachine, error) {
	ctx, cancel := c.callCtx()
	defer cancel()
	return c.remote().Get(ctx, c.acct(), id)
}

// del deletes the machine once.
func (c *check) del(id string) error {
	ctx, cancel := c.callCtx()
	defer cancel()
	err := c.remote().Delete(ctx, c.acct(), id)
	if err == nil {
		c.r.markGone(id)
	}
	return err
}

// power applies a power action once.
func (c *check) power(id string, action api.PowerAction) error {
	ctx, cancel := c.callCtx()
	defer cancel()
	return c.remote().Power(ctx, c.acct(), id, action)
}

// raw sends body (a value, or []byte sent as is) on the provider's verb
// subject and returns the raw reply.
func (c *check) raw(verb string, body any) (json.RawMessage, error) {
	ctx, cancel := c.callCtx()
	defer cancel()
	return c.r.raw(ctx, verb, body)
}

// raw sends body on the provider's verb subject and returns the raw reply.
func (r *run) raw(ctx context.Context, verb string, body any) (json.RawMessage, error) {
	var out json.RawMessage
	err := bus.Call(ctx, r.s.NC, bus.ProviderCall(r.s.ProviderID, verb), body, &out)
	return out, err
}

// maxTransient is how many retryable errors in a row a wait tolerates
// (RATE_LIMITED does not count: it is waited out).
const maxTransient = 5

// poll calls get on machine id until done says so, tolerating up to
// maxTransient retryable errors in a row; absence is passed to done as nil.
func (c *check) poll(id, what string, done func(m *api.ExternalMachine) (bool, error)) {
	transient := 0
	err := c.eventually(fmt.Sprintf("machine %s %s", id, what), func(context.Context) (bool, error) {
		m, err := c.get(id)
		switch {
		case err != nil && !retryable(err):
			c.Fatalf("get %s while waiting for it %s: %v", id, what, err)
		case api.IsCode(err, api.CodeRateLimited):
			return false, err
		case err != nil:
			if transient++; transient > maxTransient {
				c.Fatalf("get %s while waiting for it %s: %d errors in a row, last %v", id, what, transient, err)
			}
			return false, err
		}
		transient = 0
		return done(m)
	})
	if err != nil {
		c.Fatalf("%v", err)
	}
}

// publish sends body on the provider's verb subject n times, all with one
// reply inbox and the deadline header, and returns the replies that arrive
// within wait (fewer when some do not), each with its arrival time. The
// tap sees them too.
func (c *check) publish(verb string, body any, n int, deadline time.Time, wait time.Duration) ([]*nats.Msg, []time.Time) {
	data, err := json.Marshal(body)
	if err != nil {
		c.Fatalf("encode %s request: %v", verb, err)
	}
	nc := c.r.s.NC
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		c.Fatalf("subscribe %s: %v", inbox, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	msg := nats.NewMsg(bus.ProviderCall(c.r.s.ProviderID, verb))
	msg.Reply, msg.Data = inbox, data
	msg.Header.Set(bus.DeadlineHeader, strconv.FormatInt(deadline.UnixMilli(), 10))
	for range n {
		if err := nc.PublishMsg(msg); err != nil {
			c.Fatalf("publish %s: %v", verb, err)
		}
	}
	var replies []*nats.Msg
	var at []time.Time
	until := time.Now().Add(wait)
	for len(replies) < n {
		reply, err := sub.NextMsg(time.Until(until))
		if err != nil {
			break
		}
		c.r.tap.see(reply)
		replies, at = append(replies, reply), append(at, time.Now())
	}
	return replies, at
}

// decodeReply turns a reply message into out or its ComputeError.
func decodeReply(m *nats.Msg, out any) error {
	return bus.DecodeReply(m.Header.Get(micro.ErrorCodeHeader), m.Header.Get(micro.ErrorHeader), m.Data, out)
}

// waitState polls get until the machine is in state; absence stops the
// behaviour.
func (c *check) waitState(id string, state api.MachineState) *api.ExternalMachine {
	var last *api.ExternalMachine
	c.poll(id, "to be "+string(state), func(m *api.ExternalMachine) (bool, error) {
		if m == nil {
			c.Fatalf("get %s answered absent while waiting for it to be %s", id, state)
		}
		last = m
		return m.State == state, fmt.Errorf("state %s", m.State)
	})
	return last
}

// waitAbsent polls get until the machine is absent.
func (c *check) waitAbsent(id string) {
	c.poll(id, "to be absent", func(m *api.ExternalMachine) (bool, error) {
		if m != nil {
			return false, fmt.Errorf("still there, state %s", m.State)
		}
		return true, nil
	})
}

// retryable reports whether err is one a caller retries: RATE_LIMITED,
// PROVIDER_ERROR or UNAVAILABLE.
func retryable(err error) bool {
	return api.IsCode(err, api.CodeRateLimited, api.CodeProviderError, api.CodeUnavailable)
}

// maxDeleteErrors is how many retryable errors in a row (RATE_LIMITED
// aside) deleteMachine tolerates: about 11 s of a busy machine.
const maxDeleteErrors = 10

// deleteMachine deletes machine id, retrying retryable errors (the
// machine may be busy; RATE_LIMITED's retryAfterMs is honoured) until the
// delete is accepted or answers NOT_FOUND, for at most pollLimit and
// maxDeleteErrors other errors in a row.
func (r *run) deleteMachine(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, pollLimit)
	defer cancel()
	errs := 0
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		callCtx, callCancel := context.WithTimeout(ctx, r.opts.CallTimeout)
		err := r.remote.Delete(callCtx, r.s.Account, id)
		callCancel()
		switch {
		case err == nil || api.IsCode(err, api.CodeNotFound):
			return nil
		case !retryable(err):
			return err
		case api.IsCode(err, api.CodeRateLimited):
			wait = max(wait, api.AsComputeError(err).RetryAfter())
		default:
			if errs++; errs >= maxDeleteErrors {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("delete not accepted within %s: %w", pollLimit, err)
		case <-time.After(wait):
		}
	}
}

// removeMachine deletes machine id (deleteMachine) and waits until get
// answers absent, tolerating maxTransient retryable errors in a row, for
// at most pollLimit: cleanups leave nothing behind that could disturb the
// next behaviour.
func (r *run) removeMachine(ctx context.Context, id string) error {
	if err := r.deleteMachine(ctx, id); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pollLimit)
	defer cancel()
	errs := 0
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		callCtx, callCancel := context.WithTimeout(ctx, r.opts.CallTimeout)
		m, err := r.remote.Get(callCtx, r.s.Account, id)
		callCancel()
		switch {
		case err == nil && m == nil:
			return nil
		case err == nil:
			errs = 0
		case !retryable(err):
			return err
		case !api.IsCode(err, api.CodeRateLimited):
			if errs++; errs > maxTransient {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still present %s after its delete was accepted", pollLimit)
		case <-time.After(wait):
		}
	}
}

// deleteGone deletes machine id and waits until get answers absent.
func (c *check) deleteGone(id string) {
	if err := c.r.deleteMachine(c.ctx, id); err != nil {
		c.Fatalf("delete %s: %v", id, err)
	}
	c.r.markGone(id)
	c.waitAbsent(id)
}

// expectCode records a failure unless err has exactly code.
func (c *check) expectCode(what string, err error, code api.Code) bool {
	if got := api.CodeOf(err); got != code {
		if err == nil {
			c.Errorf("%s: succeeded, want %s", what, code)
		} else {
			c.Errorf("%s: answered %v, want %s", what, err, code)
		}
		return false
	}
	return true
}
