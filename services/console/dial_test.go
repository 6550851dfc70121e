package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/console"
	"better-compute.io/compute/services/reconciler"
)

// DialNATS connects as the tenant's own user: a wrong password, or another
// tenant's user, is ACCESS_DENIED at sign-in (nats-server refuses the
// subjects), and the tenant's own credentials read its pools.
func TestDialAsTheTenantsUser(t *testing.T) {
	f := startFleet(t, reconciler.Hooks{})
	pool := f.tenant(t, "acme").hetznerPool("web")
	dial := console.DialNATS(f.url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for name, c := range map[string]console.Credentials{
		"wrong password":        {Tenant: "acme", User: "acme", Password: "not-" + f.passwords["acme"]},
		"another tenant's user": {Tenant: "acme", User: "globex", Password: f.passwords["globex"]},
		"no credentials":        {Tenant: "acme"},
	} {
		_, err := dial(ctx, c)
		assert.Equal(t, api.CodeAccessDenied, api.CodeOf(err), "%s: %v", name, err)
	}
	acme, err := dial(ctx, console.Credentials{Tenant: "acme", User: "acme", Password: f.passwords["acme"]})
	require.NoError(t, err)
	defer acme.Close()
	pools, err := acme.Pools(ctx)
	require.NoError(t, err)
	require.Len(t, pools, 1)
	assert.Equal(t, pool.ID, pools[0].ID)
}
