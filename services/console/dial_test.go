package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/console"
	"better-compute.io/compute/services/reconciler"
)

// DialNATS connects with the tenant's own credential (operator mode: the
// tenant is a NATS account): a credential forged for the tenant's account
// (signed by a key that account does not know), another tenant's
// credential or none at all is ACCESS_DENIED at sign-in (nats-server
// refuses the connection or the tenant's subjects), and the tenant's own
// credential reads its pools.
func TestDialAsTheTenantsUser(t *testing.T) {
	f := startFleet(t, reconciler.Hooks{})
	pool := f.tenant(t, "acme").hetznerPool("web")
	dial := console.DialNATS(f.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for name, c := range map[string]console.Credentials{
		"a forged credential":         {Tenant: "acme", Creds: forgedCreds(t, f.CredsText(t, "acme"))},
		"another tenant's credential": {Tenant: "acme", Creds: f.CredsText(t, "globex")},
		"no credentials":              {Tenant: "acme"},
	} {
		_, err := dial(ctx, c)
		assert.Equal(t, api.CodeAccessDenied, api.CodeOf(err), "%s: %v", name, err)
	}
	acme, err := dial(ctx, console.Credentials{Tenant: "acme", Creds: f.CredsText(t, "acme")})
	require.NoError(t, err)
	defer acme.Close()
	pools, err := acme.Pools(ctx)
	require.NoError(t, err)
	require.Len(t, pools, 1)
	assert.Equal(t, pool.ID, pools[0].ID)
}

// forgedCreds is the text of a .creds file of a new user of the account
// that issued the credential genuine, signed by a key of no account.
func forgedCreds(t *testing.T, genuine string) string {
	t.Helper()
	token, err := nkeys.ParseDecoratedJWT([]byte(genuine))
	require.NoError(t, err)
	claims, err := jwt.DecodeUserClaims(token)
	require.NoError(t, err)
	account := claims.Issuer
	if claims.IssuerAccount != "" {
		account = claims.IssuerAccount
	}
	return strangerCreds(t, account)
}

// strangerCreds is the text of a well-formed .creds file of a user signed
// by a new key no operator knows, claiming to be a user of account
// ("" claims nothing).
func strangerCreds(t *testing.T, account string) string {
	t.Helper()
	signer, err := nkeys.CreateAccount()
	require.NoError(t, err)
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, err := user.PublicKey()
	require.NoError(t, err)
	uc := jwt.NewUserClaims(pub)
	uc.IssuerAccount = account
	token, err := uc.Encode(signer)
	require.NoError(t, err)
	seed, err := user.Seed()
	require.NoError(t, err)
	creds, err := jwt.FormatUserConfig(token, seed)
	require.NoError(t, err)
	return string(creds)
}
