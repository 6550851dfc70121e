package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

func TestWorkerPoolBoundsConcurrency(t *testing.T) {
	const workers = 3
	env := bustest.Start(t)
	svcConn := env.Connect(t)
	var inFlight, maxInFlight, served atomic.Int64
	release := make(chan struct{})
	startService(t, svcConn, workers, bus.Endpoint{Name: "slow", Subject: "test.slow",
		Handler: func(ctx context.Context, _ *bus.Request) (any, error) {
			n := inFlight.Add(1)
			for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
			}
			defer inFlight.Add(-1)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			served.Add(1)
			return nil, nil
		}})

	before := svcConn.Stats().InMsgs
	errs := make(chan error, 3*workers)
	for range 3 * workers {
		go func() { errs <- bus.Call(testCtx(t), env.NC, "test.slow", api.Empty{}, nil) }()
	}
	// Every request has reached the service's connection and the pool is full:
	// the other 2N requests wait for a worker.
	bustest.WaitFor(t, "all requests delivered", func() bool { return svcConn.Stats().InMsgs-before >= 3*workers })
	bustest.WaitFor(t, "a full pool", func() bool { return inFlight.Load() == workers })
	if got := maxInFlight.Load(); got != workers {
		t.Fatalf("max in flight with a full pool = %d, want %d", got, workers)
	}
	close(release)
	for range 3 * workers {
		if err := <-errs; err != nil {
			t.Fatalf("call: %v", err)
		}
	}
	if got := maxInFlight.Load(); got != workers {
		t.Fatalf("max in flight = %d, want %d", got, workers)
	}
	if got := served.Load(); got != 3*workers {
		t.Fatalf("served %d requests, want %d", got, 3*workers)
	}
}

func TestPanickingHandler(t *testing.T) {
	env := bustest.Start(t)
	var calls atomic.Int64
	startService(t, env.Connect(t), 2, bus.Endpoint{Name: "fragile", Subject: "test.fragile",
		Handler: func(_ context.Context, req *bus.Request) (any, error) {
			if calls.Add(1) == 1 {
				panic("secret-value-in-panic")
			}
			return map[string]string{"ok": "yes"}, nil
		}})
	ctx := bus.WithRequestID(testCtx(t), "req-panic")
	err := bus.Call(ctx, env.NC, "test.fragile", api.Empty{}, nil)
	want := api.Errorf(api.CodeInternal, "internal error (request req-panic)")
	if !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("panicking handler answered %v, want %v", err, want)
	}
	var out map[string]string
	if err := bus.Call(testCtx(t), env.NC, "test.fragile", api.Empty{}, &out); err != nil || out["ok"] != "yes" {
		t.Fatalf("after a panic: %v %v", out, err)
	}
}

func TestTenantChecks(t *testing.T) {
	env := bustest.Start(t)
	var calls atomic.Int64
	type body struct {
		TenantID string `json:"tenantId,omitempty"`
		Name     string `json:"name"`
	}
	startService(t, env.Connect(t), 2, bus.Endpoint{Name: "get", Subject: bus.Command("*", "things", "get"),
		Handler: func(_ context.Context, req *bus.Request) (any, error) {
			calls.Add(1)
			var in body
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			return map[string]string{"tenant": req.Tenant, "name": in.Name}, nil
		}})
	tests := []struct {
		name    string
		tenant  string
		in      body
		code    api.Code
		path    string
		message string
		called  bool
	}{
		{name: "no tenantId in body", tenant: "acme", in: body{Name: "a"}, called: true},
		{name: "matching tenantId", tenant: "acme", in: body{TenantID: "acme", Name: "a"}, called: true},
		{name: "mismatching tenantId", tenant: "acme", in: body{TenantID: "beta", Name: "a"}, called: true,
			code: api.CodeAccessDenied, path: "tenantId", message: `tenantId "beta" does not match the subject's tenant "acme"`},
		{name: "upper-case tenant token", tenant: "Acme", in: body{Name: "a"},
			code: api.CodeInvalidInput, path: "subject", message: `tenant "Acme" is not a valid tenant id ([a-z0-9][a-z0-9-]{0,62})`},
		{name: "tenant token starting with a hyphen", tenant: "-acme", in: body{Name: "a"},
			code: api.CodeInvalidInput, path: "subject", message: `tenant "-acme" is not a valid tenant id ([a-z0-9][a-z0-9-]{0,62})`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			var out map[string]string
			err := bus.Call(testCtx(t), env.NC, bus.Command(tc.tenant, "things", "get"), tc.in, &out)
			if called := calls.Load() > before; called != tc.called {
				t.Fatalf("handler called = %v, want %v", called, tc.called)
			}
			if tc.code == "" {
				if err != nil || out["tenant"] != tc.tenant || out["name"] != tc.in.Name {
					t.Fatalf("Call = %v, %v", out, err)
				}
				return
			}
			want := api.Errorf(tc.code, "%s", tc.message).WithPath(tc.path)
			if got := api.AsComputeError(err); !reflect.DeepEqual(got, want) {
				t.Fatalf("Call = %#v, want %#v", got, want)
			}
		})
	}
}

func TestExpiredRequestDropped(t *testing.T) {
	env := bustest.Start(t)
	var calls atomic.Int64
	startService(t, env.Connect(t), 2, bus.Endpoint{Name: "count", Subject: "test.count",
		Handler: func(context.Context, *bus.Request) (any, error) { calls.Add(1); return nil, nil }})
	msg := nats.NewMsg("test.count")
	msg.Data = []byte(`{}`)
	msg.Header.Set(bus.DeadlineHeader, strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10))
	if _, err := env.NC.RequestMsg(msg, 300*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("expired request answered: %v", err)
	}
	// A live request on the same endpoint is served, and it is the only one.
	if err := bus.Call(testCtx(t), env.NC, "test.count", api.Empty{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("handler ran %d times, want 1", got)
	}
}

func TestServiceInfoAndStop(t *testing.T) {
	env := bustest.Start(t)
	var finished atomic.Bool
	entered := make(chan struct{})
	release := make(chan struct{})
	svcConn := env.Connect(t)
	svc, err := bus.StartService(svcConn, bus.ServiceConfig{Name: "stoppable", Version: "2.1.0", Endpoints: []bus.Endpoint{
		{Name: "hold", Subject: "test.hold", Handler: func(context.Context, *bus.Request) (any, error) {
			close(entered)
			<-release
			finished.Store(true)
			return nil, nil
		}},
		{Name: "other", Subject: "test.other", Handler: func(context.Context, *bus.Request) (any, error) { return nil, nil }},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	askService(t, env.NC, micro.InfoVerb, "stoppable", &info)
	var names []string
	for _, ep := range info.Endpoints {
		names = append(names, fmt.Sprintf("%s=%s/%s", ep.Name, ep.Subject, ep.QueueGroup))
	}
	if info.Type != micro.InfoResponseType || info.Name != "stoppable" || info.Version != "2.1.0" || !reflect.DeepEqual(names, []string{"hold=test.hold/q", "other=test.other/q"}) {
		t.Fatalf("info %s %s %v", info.Name, info.Version, names)
	}
	callErr := make(chan error, 1)
	go func() { callErr <- bus.Call(testCtx(t), env.NC, "test.hold", api.Empty{}, nil) }()
	<-entered
	stopped := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { stopped <- svc.Stop() })
	close(release)
	wg.Wait()
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !finished.Load() {
		t.Fatal("Stop returned before the running handler finished")
	}
	if err := <-callErr; err != nil {
		t.Fatalf("the request running at Stop: %v", err)
	}
	err = bus.Call(testCtx(t), env.NC, "test.other", api.Empty{}, nil)
	if ce := api.AsComputeError(err); ce.Code != api.CodeUnavailable {
		t.Fatalf("call after Stop = %v, want UNAVAILABLE", err)
	}
}

// askService sends verb to the service name over the bus, as `nats micro`
// does, and decodes the reply into out (a micro.Info, micro.Stats, …).
func askService(t *testing.T, nc *nats.Conn, verb micro.Verb, name string, out any) {
	t.Helper()
	subject, err := micro.ControlSubject(verb, name, "")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := nc.Request(subject, nil, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	if err := json.Unmarshal(msg.Data, out); err != nil {
		t.Fatalf("%s answered %s: %v", subject, msg.Data, err)
	}
}

// $SRV.STATS counts every request and every error reply of an endpoint and
// the time until the reply, though handlers reply from worker goroutines.
func TestServiceStats(t *testing.T) {
	const sleep = 20 * time.Millisecond
	env := bustest.Start(t)
	startService(t, env.Connect(t), 4,
		bus.Endpoint{Name: "work", Subject: "test.work", Handler: func(_ context.Context, req *bus.Request) (any, error) {
			time.Sleep(sleep)
			var in struct {
				Fail string `json:"fail"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			if in.Fail != "" {
				return nil, api.Errorf(api.CodeConflict, "%s", in.Fail)
			}
			return nil, nil
		}},
		bus.Endpoint{Name: "idle", Subject: "test.idle", Handler: func(context.Context, *bus.Request) (any, error) { return nil, nil }})

	const ok = 3
	for range ok {
		if err := bus.Call(testCtx(t), env.NC, "test.work", api.Empty{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	failures := []string{"first failure", "second failure"}
	for _, msg := range failures {
		err := bus.Call(testCtx(t), env.NC, "test.work", map[string]string{"fail": msg}, nil)
		if !api.IsCode(err, api.CodeConflict) {
			t.Fatalf("failing call = %v, want CONFLICT", err)
		}
	}

	var stats micro.Stats
	askService(t, env.NC, micro.StatsVerb, "test", &stats)
	if stats.Type != micro.StatsResponseType || stats.Name != "test" {
		t.Fatalf("stats %+v", stats)
	}
	byName := map[string]*micro.EndpointStats{}
	for _, ep := range stats.Endpoints {
		byName[ep.Name] = ep
	}
	work, idle := byName["work"], byName["idle"]
	if work == nil || idle == nil || len(stats.Endpoints) != 2 {
		t.Fatalf("stats endpoints %+v, want work and idle", stats.Endpoints)
	}
	total := ok + len(failures)
	if work.NumRequests != total || work.NumErrors != len(failures) || work.LastError != "409:second failure" ||
		work.Subject != "test.work" || work.QueueGroup != "q" {
		t.Fatalf("work stats %+v, want %d requests, %d errors, last error %q", work, total, len(failures), "409:second failure")
	}
	// Lower bounds: every request slept in its handler before its reply.
	if work.ProcessingTime < time.Duration(total)*sleep || work.AverageProcessingTime < sleep {
		t.Fatalf("work processing time %s (average %s), want at least %s (%s)", work.ProcessingTime, work.AverageProcessingTime, time.Duration(total)*sleep, sleep)
	}
	if idle.NumRequests != 0 || idle.NumErrors != 0 || idle.ProcessingTime != 0 {
		t.Fatalf("idle stats %+v, want none", idle)
	}
}

// The $SRV verbs, like the endpoints, answer only onto an inbox: a PING
// whose reply subject is an event subject publishes nothing there.
func TestServiceVerbsAnswerOnlyInboxes(t *testing.T) {
	env := bustest.Start(t)
	svc, err := bus.StartService(env.Connect(t), bus.ServiceConfig{Name: "pinged", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	forged, err := env.NC.SubscribeSync("compute.v1.acme.events.forged")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.NC.PublishRequest("$SRV.PING.pinged", "compute.v1.acme.events.forged", nil); err != nil {
		t.Fatal(err)
	}
	var ping micro.Ping
	askService(t, env.NC, micro.PingVerb, "pinged", &ping) // answered in order after the forged one
	if m, err := forged.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("a PING with a forged reply subject was answered there: %s", m.Data)
	}
}

// A handler's RawJSON reply goes out as its bytes (not base64, not
// re-encoded: the spaces stay), and encodes as itself elsewhere too.
func TestRawJSONReplyIsSentAsItIs(t *testing.T) {
	env := bustest.Start(t)
	const body = `{"items": [{"n": 1}]}`
	startService(t, env.Connect(t), 2, bus.Endpoint{Name: "raw", Subject: "test.raw",
		Handler: func(context.Context, *bus.Request) (any, error) { return bus.RawJSON(body), nil }})
	msg, err := env.NC.Request("test.raw", []byte(`{}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Data) != body {
		t.Fatalf("reply %s, want %s", msg.Data, body)
	}
	if enc, err := json.Marshal(map[string]any{"page": bus.RawJSON(body)}); err != nil || string(enc) != `{"page":{"items":[{"n":1}]}}` {
		t.Fatalf("RawJSON encoded as %s (%v)", enc, err)
	}
}
