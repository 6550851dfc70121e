package authtest

import (
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// Known secret values go in through every path that takes one (a
// platform SSH key too, used to configure, drain, exec and read logs);
// after both tenants' walkthroughs no KV value, stream message, file of the JetStream
// store, log line (services and emulator, debug level) or reply holds any
// of them.
func TestNoPlainValueAnywhere(t *testing.T) {
	const (
		acmeSpare   = "leak-acme-spare-value-31c7"
		globexDB    = "leak-globex-db-password-9a04"
		conflicting = "leak-conflicting-value-e5d2"
		badName     = "leak-bad-name-value-07b8"
	)
	s := startStack(t)
	acme, globex := s.tenantClient(t, "acme"), s.tenantClient(t, "globex")

	a := walkthrough(t, acme, acmeToken)
	g := walkthrough(t, globex, globexToken)

	// The same idempotent put again answers the same secret; another value
	// under its key is a conflict; a bad name is refused. None quotes a value.
	var again api.Secret
	acme.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "hcloud", Value: acmeToken, IdempotencyKey: "hcloud-1"}, &again)
	if again.ID != a.secret.ID {
		t.Fatalf("repeated put answered %s, want %s", again.ID, a.secret.ID)
	}
	wantCode(t, "put with a used key", acme.call(bus.ResourceSecrets, "put",
		api.SecretPutRequest{Name: "hcloud", Value: conflicting, IdempotencyKey: "hcloud-1"}, nil), api.CodeConflict, "idempotencyKey")
	wantCode(t, "put with a bad name", acme.call(bus.ResourceSecrets, "put",
		api.SecretPutRequest{Name: "bad name", Value: badName}, nil), api.CodeInvalidInput, "name")
	acme.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "spare", Value: acmeSpare}, nil)
	globex.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "db", Value: globexDB}, nil)

	// Rotation: acme stores the token again and points its account at the
	// new secret; the next provider call resolves it.
	var rotated api.Secret
	acme.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "hcloud-2", Value: acmeToken}, &rotated)
	acme.must(bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: a.account.ID, Version: a.account.Version,
		Config: map[string]any{"token": rotated.Ref}}, &a.account)
	var offers api.List[api.Offer]
	acme.must(bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: a.account.ID}, &offers)
	if a.account.Version != 2 || len(offers.Items) == 0 {
		t.Fatalf("after rotation: version %d, %d offers", a.account.Version, len(offers.Items))
	}

	// Machine access: the platform's private key configures, drains,
	// execs and reads logs on a host of acme's.
	key := newPlatformKey(t)
	accessWalkthrough(t, acme, a, key)

	finish(t, acme, a)
	finish(t, globex, g)

	replies := append(append([]string{}, acme.replies...), globex.replies...)
	bustest.AssertNowhere(t, bustest.Scan{NC: s.Admin, Dirs: []string{s.StoreDir}, Logs: s.Logs.String(), Replies: replies},
		acmeToken, globexToken, acmeSpare, globexDB, conflicting, badName, key.pem, key.seed, key.body)
}
