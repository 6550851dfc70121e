package bus_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// seen records what a handler observed of its request.
type seen struct {
	mu          sync.Mutex
	deadline    time.Time
	hasDeadline bool
	requestID   string
	ctxID       string
	body        string
}

func (s *seen) record(ctx context.Context, req *bus.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadline, s.hasDeadline = ctx.Deadline()
	s.requestID, s.ctxID, s.body = req.RequestID, bus.RequestID(ctx), string(req.Data)
}

func (s *seen) get() seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seen{deadline: s.deadline, hasDeadline: s.hasDeadline, requestID: s.requestID, ctxID: s.ctxID, body: s.body}
}

func TestCall(t *testing.T) {
	env := bustest.Start(t)
	var obs seen
	unstick := make(chan struct{})
	type greeting struct {
		Name string `json:"name"`
	}
	startService(t, env.Connect(t), 4,
		bus.Endpoint{Name: "echo", Subject: "test.echo", Handler: func(ctx context.Context, req *bus.Request) (any, error) {
			obs.record(ctx, req)
			var in greeting
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			return map[string]string{"hello": in.Name}, nil
		}},
		bus.Endpoint{Name: "limited", Subject: "test.limited", Handler: func(_ context.Context, req *bus.Request) (any, error) {
			req.ReplyHeader.Set("Test-Budget", "0 left")
			return nil, api.RateLimited(1500*time.Millisecond, "slow down").WithPath("machine.name")
		}},
		bus.Endpoint{Name: "foreign", Subject: "test.foreign", Handler: func(context.Context, *bus.Request) (any, error) {
			return nil, errors.New("disk on fire")
		}},
		bus.Endpoint{Name: "empty", Subject: "test.empty", Handler: func(context.Context, *bus.Request) (any, error) {
			return nil, nil
		}},
		bus.Endpoint{Name: "stuck", Subject: "test.stuck", Handler: func(context.Context, *bus.Request) (any, error) {
			<-unstick // ignores its deadline: the caller must give up on its own
			return nil, nil
		}},
		bus.Endpoint{Name: "expiring", Subject: "test.expiring", Handler: func(ctx context.Context, _ *bus.Request) (any, error) {
			<-ctx.Done()
			return nil, fmt.Errorf("read state: %w", ctx.Err())
		}},
	)
	t.Cleanup(func() { close(unstick) }) // before the service stops

	t.Run("success", func(t *testing.T) {
		var out map[string]string
		if err := bus.Call(testCtx(t), env.NC, "test.echo", greeting{Name: "ada"}, &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, map[string]string{"hello": "ada"}) {
			t.Fatalf("reply %v", out)
		}
		if got := obs.get().body; got != `{"name":"ada"}` {
			t.Fatalf("handler got body %s", got)
		}
	})
	t.Run("raw bytes sent as is", func(t *testing.T) {
		var out map[string]string
		if err := bus.Call(testCtx(t), env.NC, "test.echo", []byte(` {"name":"raw"}`), &out); err != nil {
			t.Fatal(err)
		}
		if out["hello"] != "raw" || obs.get().body != ` {"name":"raw"}` {
			t.Fatalf("reply %v, body %q", out, obs.get().body)
		}
	})
	t.Run("nil out ignores the reply", func(t *testing.T) {
		if err := bus.Call(testCtx(t), env.NC, "test.echo", greeting{Name: "x"}, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("nil reply is an empty object", func(t *testing.T) {
		out := map[string]any{"stale": true}
		if err := bus.Call(testCtx(t), env.NC, "test.empty", api.Empty{}, &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, map[string]any{"stale": true}) {
			t.Fatalf("reply merged into %v", out)
		}
	})
	t.Run("handler decode error passes through", func(t *testing.T) {
		err := bus.Call(testCtx(t), env.NC, "test.echo", map[string]int{"name": 1}, nil)
		want := api.InvalidInput("name", `field "name" must be a string, not a JSON number`)
		if !reflect.DeepEqual(api.AsComputeError(err), want) {
			t.Fatalf("Call = %#v, want %#v", err, want)
		}
	})
	t.Run("compute error with details and reply headers", func(t *testing.T) {
		h, err := bus.CallHeaders(testCtx(t), env.NC, "test.limited", api.Empty{}, nil)
		if got := h.Get("Test-Budget"); got != "0 left" {
			t.Fatalf("a failure's reply header Test-Budget = %q, want the handler's %q", got, "0 left")
		}
		want := &api.ComputeError{Code: api.CodeRateLimited, Message: "slow down",
			Details: api.ErrorDetails{RetryAfterMs: new(int64(1500)), Path: new("machine.name")}}
		ce := api.AsComputeError(err)
		if !reflect.DeepEqual(ce, want) {
			t.Fatalf("Call = %#v, want %#v", ce, want)
		}
		if ce.RetryAfter() != 1500*time.Millisecond {
			t.Fatalf("RetryAfter = %v", ce.RetryAfter())
		}
	})
	t.Run("foreign error is INTERNAL", func(t *testing.T) {
		err := bus.Call(testCtx(t), env.NC, "test.foreign", api.Empty{}, nil)
		if ce := api.AsComputeError(err); ce.Code != api.CodeInternal || ce.Message != "disk on fire" {
			t.Fatalf("Call = %v", err)
		}
	})
	t.Run("no responders", func(t *testing.T) {
		err := bus.Call(testCtx(t), env.NC, "test.nobody", api.Empty{}, nil)
		if ce := api.AsComputeError(err); ce.Code != api.CodeUnavailable || ce.Message != "no service answers test.nobody" {
			t.Fatalf("Call = %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := bus.Call(ctx, env.NC, "test.stuck", api.Empty{}, nil)
		if ce := api.AsComputeError(err); ce.Code != api.CodeUnavailable || ce.Message != "no reply on test.stuck before the deadline" {
			t.Fatalf("Call = %v", err)
		}
	})
	t.Run("handler stopped by its deadline answers UNAVAILABLE", func(t *testing.T) {
		// The header deadline ends the handler long before the caller gives up.
		msg := nats.NewMsg("test.expiring")
		msg.Data = []byte(`{}`)
		msg.Header.Set(bus.DeadlineHeader, strconv.FormatInt(time.Now().Add(100*time.Millisecond).UnixMilli(), 10))
		reply, err := env.NC.RequestMsg(msg, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		err = bus.DecodeReply(reply.Header.Get(micro.ErrorCodeHeader), reply.Header.Get(micro.ErrorHeader), reply.Data, nil)
		want := api.Errorf(api.CodeUnavailable, "request deadline passed: read state: context deadline exceeded")
		if got := api.AsComputeError(err); !reflect.DeepEqual(got, want) || reply.Header.Get(micro.ErrorCodeHeader) != "503" {
			t.Fatalf("reply %#v (header %q), want %#v", got, reply.Header.Get(micro.ErrorCodeHeader), want)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cancel()
		err := bus.Call(ctx, env.NC, "test.echo", greeting{}, nil)
		if ce := api.AsComputeError(err); ce.Code != api.CodeUnavailable || ce.Message != "request on test.echo cancelled" {
			t.Fatalf("Call = %v", err)
		}
	})
	t.Run("unencodable request", func(t *testing.T) {
		err := bus.Call(testCtx(t), env.NC, "test.echo", func() {}, nil)
		if ce := api.AsComputeError(err); ce.Code != api.CodeInternal || ce.Message != "encode request for test.echo: json: unsupported type: func()" {
			t.Fatalf("Call = %v", err)
		}
	})
	t.Run("deadline header honoured", func(t *testing.T) {
		deadline := time.Now().Add(7 * time.Second)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if err := bus.Call(ctx, env.NC, "test.echo", greeting{}, nil); err != nil {
			t.Fatal(err)
		}
		got := obs.get()
		if want := time.UnixMilli(deadline.UnixMilli()); !got.hasDeadline || !got.deadline.Equal(want) {
			t.Fatalf("handler deadline %v (set %v), want the caller's %v", got.deadline, got.hasDeadline, want)
		}
	})
	t.Run("default deadline", func(t *testing.T) {
		before := time.Now()
		if err := bus.Call(context.Background(), env.NC, "test.echo", greeting{}, nil); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		got := obs.get().deadline
		if got.Before(before.Add(bus.DefaultTimeout).Add(-time.Millisecond)) || got.After(after.Add(bus.DefaultTimeout)) {
			t.Fatalf("handler deadline %v, want %v after the call (%v..%v)", got, bus.DefaultTimeout, before, after)
		}
	})
	t.Run("request id propagated", func(t *testing.T) {
		ctx := bus.WithRequestID(testCtx(t), "req-propagated-1")
		if got := bus.RequestID(ctx); got != "req-propagated-1" {
			t.Fatalf("RequestID(ctx) = %q", got)
		}
		if err := bus.Call(ctx, env.NC, "test.echo", greeting{}, nil); err != nil {
			t.Fatal(err)
		}
		if got := obs.get(); got.requestID != "req-propagated-1" || got.ctxID != "req-propagated-1" {
			t.Fatalf("handler saw request id %q, ctx id %q", got.requestID, got.ctxID)
		}
	})
	t.Run("request id made when absent", func(t *testing.T) {
		if got := bus.RequestID(context.Background()); got != "" {
			t.Fatalf("RequestID(background) = %q", got)
		}
		if err := bus.Call(testCtx(t), env.NC, "test.echo", greeting{}, nil); err != nil {
			t.Fatal(err)
		}
		if got := obs.get(); !api.ValidID("req_", got.requestID) || got.ctxID != got.requestID {
			t.Fatalf("handler saw request id %q, ctx id %q", got.requestID, got.ctxID)
		}
	})
}
