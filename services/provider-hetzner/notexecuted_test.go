package hetzner

import (
	"context"
	"net"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// An error says details.notExecuted exactly when the call provably changed
// nothing: its changing request was refused with a 4xx or never sent, not
// when it was accepted and then failed, or its reply was lost.
func TestErrorsSayWhenNothingWasExecuted(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_n", "inst_n")
	e.clock.Advance(testActionDuration)
	ctx := context.Background()
	reset := func() error { return e.client.Power(ctx, e.call(""), m.ID, api.ActionReset) }
	const post = "POST /servers/{id}/actions/reset"
	cases := []struct {
		name string
		arm  func()
		want bool
	}{
		{"423 locked", func() { e.emu.FailNext(post, 1, 423, "locked", "another action is running") }, true},
		{"409 conflict", func() { e.emu.FailNext(post, 1, 409, "conflict", "try again") }, true},
		{"429", func() { e.emu.FailNext(post, 1, 429, "rate_limit_exceeded", "slow down") }, true},
		{"accepted, action failed", func() { e.emu.FailNextAction("reset_server", "action_failed", "no") }, false},
		{"accepted, action poll rate-limited", func() { e.emu.FailNext("GET /actions", 1, 429, "rate_limit_exceeded", "slow down") }, false},
		{"reply lost", func() { e.emu.DropResponseNext(post, 1) }, false},
	}
	for _, c := range cases {
		c.arm()
		err := reset()
		if err == nil {
			t.Fatalf("%s: reset succeeded", c.name)
		}
		if got := api.AsComputeError(err).NotExecuted(); got != c.want {
			t.Errorf("%s: %v has notExecuted %v, want %v", c.name, err, got, c.want)
		}
		e.clock.Advance(testActionDuration) // let an accepted action end
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there: every connection is refused
	c, err := Definition(WithEndpoint(closed)).New(provider.BuildContext{Account: testAccount()})
	if err != nil {
		t.Fatal(err)
	}
	err = c.(*client).Power(ctx, e.call(""), m.ID, api.ActionReset)
	if ce := api.AsComputeError(err); ce == nil || !ce.NotExecuted() {
		t.Fatalf("reset over a refused connection: %v, want notExecuted", err)
	}
}
