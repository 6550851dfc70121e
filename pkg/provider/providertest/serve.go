package providertest

import (
	"testing"

	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
)

// Serve serves def on a fresh embedded NATS server (bustest.Start), its
// calls on clock and resolving every tenant's secrets with secrets, stops
// the service when the test ends, and returns a Remote for def.ID().
func Serve(t testing.TB, def *provider.Defined, c clock.Clock, secrets provider.SecretResolver) provider.Remote {
	t.Helper()
	nats := bustest.Start(t)
	svc, err := provider.Serve(nats.NC, def, provider.ServeOptions{
		Clock:    c,
		Resolver: func(string) provider.SecretResolver { return secrets },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return provider.Remote{NC: nats.NC, ID: def.ID()}
}
