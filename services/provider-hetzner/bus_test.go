package hetzner

import (
	"context"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
)

// TestThroughBus serves the provider on an embedded NATS server against
// the emulator and drives every verb through provider.Remote.
func TestThroughBus(t *testing.T) {
	e := newEnv(t)
	r := providertest.Serve(t, Definition(WithEndpoint(e.srv.URL()), WithPollInterval(testActionDuration)), e.clock, testSecrets)
	acct := testAccount()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	desc, err := r.Describe(ctx)
	if err != nil || desc.ID != ProviderID || len(desc.Manifest) != 2 || len(desc.ConfigSchema) == 0 {
		t.Fatalf("describe = %+v, %v", desc, err)
	}
	offers, err := r.Offers(ctx, acct, api.OfferQuery{MinVcpu: 8})
	if err != nil || len(offers) == 0 {
		t.Fatalf("offers = %v, %v", offers, err)
	}
	m, err := r.Create(ctx, acct, "inst_bus", api.MachineSpec{Name: "inst_bus", OfferID: "cx23", Image: "ubuntu-24.04"})
	if err != nil || m.State != api.StatePending || m.Name != "inst-bus" {
		t.Fatalf("create = %+v, %v", m, err)
	}
	e.clock.Advance(testActionDuration)
	wantState := func(state api.MachineState) {
		t.Helper()
		got, err := r.Get(ctx, acct, m.ID)
		if err != nil || got == nil || got.State != state {
			t.Fatalf("get = %+v, %v; want %s", got, err, state)
		}
	}
	wantState(api.StateRunning)
	if err := r.Power(ctx, acct, m.ID, api.ActionOff); err != nil {
		t.Fatal(err)
	}
	wantState(api.StateStopped)
	if err := r.Power(ctx, acct, m.ID, api.ActionOn); err != nil {
		t.Fatal(err)
	}
	wantState(api.StateRunning)
	if err := r.Power(ctx, acct, m.ID, api.ActionNMI); !api.IsCode(err, api.CodeUnsupported) {
		t.Fatalf("power nmi = %v, want UNSUPPORTED", err)
	}
	if re, err := r.Reinstall(ctx, acct, m.ID, "debian-12"); err != nil || re.ID != m.ID || re.State != api.StateRunning {
		t.Fatalf("reinstall = %+v, %v", re, err)
	}
	page, err := r.List(ctx, acct, "", 0)
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != m.ID || page.NextCursor != "" {
		t.Fatalf("list = %+v, %v", page, err)
	}
	if err := r.Delete(ctx, acct, m.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(testActionDuration)
	if got, err := r.Get(ctx, acct, m.ID); err != nil || got != nil {
		t.Fatalf("get after delete = %+v, %v; want absent", got, err)
	}
	if err := r.Delete(ctx, acct, m.ID); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("second delete = %v, want NOT_FOUND", err)
	}
}
