package provider_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
)

func TestCallSecret(t *testing.T) {
	call := &provider.Call{Account: api.ProviderAccount{TenantID: "acme", Config: map[string]any{
		"token": secretRef, "count": int64(3), "empty": "", "other": envRef}}, Secrets: fakeSecrets{tenant: "acme"}}
	if v, err := call.Secret(context.Background(), "token"); err != nil || v != tokenValue {
		t.Fatalf("Secret(token) = %q, %v", v, err)
	}
	for _, field := range []string{"missing", "count", "empty"} {
		_, err := call.Secret(context.Background(), field)
		want := api.InvalidConfig("config."+field, "config field %s must hold a secret reference", field)
		if !reflect.DeepEqual(api.AsComputeError(err), want) {
			t.Errorf("Secret(%s) = %#v, want %#v", field, err, want)
		}
	}
	_, err := call.Secret(context.Background(), "other")
	if want := api.NotFound("secret", envRef); !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Errorf("Secret(other) = %#v, want the resolver's %#v", err, want)
	}
}

// manualClock fires After channels only when told.
type manualClock struct {
	now   time.Time
	fired chan time.Time
	asked chan time.Duration
}

func (c *manualClock) Now() time.Time { return c.now }
func (c *manualClock) After(d time.Duration) <-chan time.Time {
	c.asked <- d
	return c.fired
}

func TestSleep(t *testing.T) {
	manual := &manualClock{fired: make(chan time.Time, 1), asked: make(chan time.Duration, 1)}
	done := make(chan error, 1)
	go func() { done <- provider.Sleep(context.Background(), manual, 90*time.Second) }()
	if d := <-manual.asked; d != 90*time.Second {
		t.Fatalf("Sleep asked the manual for %v", d)
	}
	manual.fired <- manual.now
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- provider.Sleep(ctx, manual, time.Hour) }()
	<-manual.asked
	cancel()
	want := api.Errorf(api.CodeUnavailable, "call ended while waiting: context canceled")
	if err := <-done; !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("Sleep after cancel = %#v, want %#v", err, want)
	}

	start := time.Now()
	if now := (clock.Real{}).Now(); now.Before(start) {
		t.Fatalf("clock.Real.Now = %v, before %v", now, start)
	}
	if err := provider.Sleep(context.Background(), clock.Real{}, time.Millisecond); err != nil {
		t.Fatalf("Sleep on the system clock = %v", err)
	}
}
