package provider_test

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/memory"
)

// A get expecting a key answers absent for a machine whose id now carries
// another key, and says so once in the log, with the tenant and account
// of the call (once each: the bus adds no empty tenant of its own).
func TestServeGetChecksTheKey(t *testing.T) {
	env := bustest.Start(t)
	cloud := memory.NewCloud()
	logs := &bustest.LogBuffer{}
	svc, err := provider.Serve(env.NC, memory.Definition(cloud), provider.ServeOptions{Logger: zerolog.New(logs),
		Resolver: func(tenant string) provider.SecretResolver { return fakeSecrets{tenant: tenant} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	ctx, acct := testCtx(t), api.ProviderAccount{ID: "pacct_1", TenantID: "acme", Version: 1, Config: map[string]any{"token": secretRef}}

	m, err := provider.Remote{NC: env.NC, ID: memory.ProviderID}.Create(ctx, acct, "key-1", api.MachineSpec{Name: "web-1", OfferID: "small", Image: "debian-12"})
	if err != nil || m.IdempotencyKey != "key-1" {
		t.Fatalf("create = %+v, %v", m, err)
	}
	keyed := provider.Remote{NC: env.NC, ID: memory.ProviderID, IdempotencyKey: "key-1"}
	if got, err := keyed.Get(ctx, acct, m.ID); err != nil || got == nil || got.IdempotencyKey != "key-1" {
		t.Fatalf("get of its own machine = %+v, %v", got, err)
	}
	cloud.ReuseID(m.ID, "key-2")
	if got, err := keyed.Get(ctx, acct, m.ID); err != nil || got != nil {
		t.Fatalf("get of a reused id = %+v, %v; want absent", got, err)
	}
	if got, err := (provider.Remote{NC: env.NC, ID: memory.ProviderID}).Get(ctx, acct, m.ID); err != nil || got == nil || got.IdempotencyKey != "key-2" {
		t.Fatalf("get expecting no key = %+v, %v; want the machine of key-2", got, err)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "another key's machine") {
			line = l
		}
	}
	if strings.Count(line, `"tenant":"acme"`) != 1 || strings.Count(line, `"tenant"`) != 1 || !strings.Contains(line, `"account":"pacct_1"`) {
		t.Fatalf("log line %q: want the tenant once and the account", line)
	}
}

// A delete with no id and an idempotency key deletes the key's machine
// (delete.byKey), NOT_FOUND once none carries it; with neither it is
// INVALID_INPUT naming id; a provider not claiming delete.byKey answers
// UNSUPPORTED and keeps its machine.
func TestServeDeleteByKey(t *testing.T) {
	env := bustest.Start(t)
	cloud := memory.NewCloud()
	base := memory.Definition(cloud)
	noKeyDelete := base.Definition()
	noKeyDelete.ID = "nokey"
	noKeyDelete.Capabilities = []string{provider.CapabilityList}
	for _, d := range []*provider.Defined{base, provider.MustDefine(noKeyDelete)} {
		svc, err := provider.Serve(env.NC, d, provider.ServeOptions{Logger: zerolog.Nop(),
			Resolver: func(tenant string) provider.SecretResolver { return fakeSecrets{tenant: tenant} }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop() })
	}
	ctx, acct := testCtx(t), api.ProviderAccount{ID: "pacct_1", TenantID: "acme", Version: 1, Config: map[string]any{"token": secretRef}}
	remote := provider.Remote{NC: env.NC, ID: memory.ProviderID}
	spec := api.MachineSpec{Name: "web-1", OfferID: "small", Image: "debian-12"}

	if err := remote.Delete(ctx, acct, ""); api.AsComputeError(err).Path() != "id" || !api.IsCode(err, api.CodeInvalidInput) {
		t.Fatalf("delete with neither id nor key = %v, want INVALID_INPUT naming id", err)
	}
	kept, err := provider.Remote{NC: env.NC, ID: "nokey"}.Create(ctx, acct, "key-kept", spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := (provider.Remote{NC: env.NC, ID: "nokey"}).DeleteByKey(ctx, acct, "key-kept"); !api.IsCode(err, api.CodeUnsupported) {
		t.Fatalf("delete by key of a provider without delete.byKey = %v, want UNSUPPORTED", err)
	}
	if _, err := remote.Create(ctx, acct, "key-1", spec); err != nil {
		t.Fatal(err)
	}
	if err := remote.DeleteByKey(ctx, acct, "key-1"); err != nil {
		t.Fatalf("delete by key = %v", err)
	}
	if err := remote.DeleteByKey(ctx, acct, "key-1"); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("second delete by key = %v, want NOT_FOUND", err)
	}
	if got := cloud.ByKey(); len(got) != 1 || got["key-kept"].ID != kept.ID {
		t.Fatalf("machines by key after the deletes: %+v, want only key-kept's %s", got, kept.ID)
	}
}
