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
