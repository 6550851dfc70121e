package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

func TestIsInbox(t *testing.T) {
	for subject, want := range map[string]bool{
		"_INBOX.abc.1":                  true,
		"_INBOX_acme.abc.1":             true,
		"_INBOX_svc_secrets.x":          true,
		"_R_.Ab3.x9":                    true,
		"_R_x":                          false,
		"compute.v1.b.events.i.x.y":     false,
		"$KV.compute_instances.b.inst_": false,
		"$JS.ACK.x":                     false,
		"inbox._INBOX":                  false,
		"":                              false,
	} {
		if got := bus.IsInbox(subject); got != want {
			t.Errorf("IsInbox(%q) = %v, want %v", subject, got, want)
		}
	}
}

// A request whose reply subject is not an inbox, or that has none, never
// reaches the handler: its reply would be published wherever the caller
// pointed it, and a reply arriving as a request has none.
func TestServiceAnswersOnlyInboxes(t *testing.T) {
	env := bustest.Start(t)
	var calls atomic.Int32
	startService(t, env.NC, 1, bus.Endpoint{Name: "echo", Subject: "test.echo", Handler: func(context.Context, *bus.Request) (any, error) {
		calls.Add(1)
		return map[string]string{"ok": "yes"}, nil
	}})
	forged := "compute.v1.other.events.instances.inst_x.deleted"
	sub, err := env.NC.SubscribeSync(forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.NC.PublishRequest("test.echo", forged, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// No reply subject at all: what arrives when a caller aims a service's
	// reply at a verb subject (a verb it may not publish itself).
	if err := env.NC.Publish("test.echo", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// One worker, delivered in order: once this request is answered, the
	// forged ones were seen and dropped.
	if err := bus.Call(testCtx(t), env.NC, "test.echo", []byte(`{}`), nil); err != nil {
		t.Fatalf("request with an inbox: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1 (the forged and the missing reply subject must be dropped)", n)
	}
	if n, _, _ := sub.Pending(); n != 0 {
		t.Fatalf("%d replies published on %s", n, forged)
	}
}

func TestConnectInboxPrefix(t *testing.T) {
	env := bustest.Start(t)
	if _, err := bus.Connect(bus.ConnectOptions{URL: env.URL, InboxPrefix: "replies_acme"}); err == nil || !strings.Contains(err.Error(), `must start with "_INBOX"`) {
		t.Fatalf("Connect with a prefix outside _INBOX: %v", err)
	}
	nc, err := bus.Connect(bus.ConnectOptions{URL: env.URL, InboxPrefix: "_INBOX_acme"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	replies := make(chan string, 1)
	if _, err := env.NC.Subscribe("test.where", func(m *nats.Msg) { replies <- m.Reply; _ = m.Respond([]byte(`{}`)) }); err != nil {
		t.Fatal(err)
	}
	if err := env.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := bus.Call(testCtx(t), nc, "test.where", []byte(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	if reply := <-replies; !strings.HasPrefix(reply, "_INBOX_acme.") {
		t.Fatalf("reply subject %q, want _INBOX_acme.…", reply)
	}
}
