package authtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	computeclient "better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/natsauth"
	"better-compute.io/compute/services/tenants"
)

// A tenant created through the tenants API while nats-server runs works at
// once; revoking one credential closes its connection and refuses it from
// then on while the tenant's other credential works; revoking the tenant
// closes every connection and refuses every credential.
func TestTenantCreatedAtRuntimeAndRevoked(t *testing.T) {
	s := startStack(t)
	tenant := s.CreateTenant(t, api.TenantCreateRequest{ID: "initech"})
	if tenant.State != api.TenantActive || tenant.Account == "" || tenant.Limits != api.DefaultTenantLimits {
		t.Fatalf("created tenant: %+v", tenant)
	}
	first := s.MintCreds(t, "initech", "first", api.ScopeAdmin)
	second := s.MintCreds(t, "initech", "second", api.ScopeSecretsManage)
	c1 := s.connect(t, "initech", first, "_INBOX_initech")
	c2 := s.connect(t, "initech", second, "_INBOX_initech")
	c1.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "db", Value: "initech-db-1"}, nil)
	var list api.List[api.Secret]
	c2.must(bus.ResourceSecrets, "list", api.ListRequest{}, &list)
	if len(list.Items) != 1 || list.Items[0].TenantID != "initech" {
		t.Fatalf("initech's secrets: %+v", list.Items)
	}

	var got api.Tenant
	if err := s.AdminCall(tenants.Subject("get"), api.IDRequest{ID: "initech"}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Credentials) != 2 || got.Credentials[1].Name != "second" ||
		len(got.Credentials[1].Scopes) != 1 || got.Credentials[1].Scopes[0] != api.ScopeSecretsManage {
		t.Fatalf("credentials on record: %+v", got.Credentials)
	}
	secondID := got.Credentials[1].ID
	// a watch on a reconnecting connection (the CLI's) of the credential
	watcher, err := bus.Connect(bus.ConnectOptions{URL: s.URL, Name: "watch", CredsFile: second, InboxPrefix: "_INBOX_initech"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watcher.Close)
	events, err := computeclient.New(watcher, "initech", 0).Instances.Watch(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AdminCall(tenants.Subject("revoke"), api.TenantRevokeRequest{ID: "initech", Credential: secondID}, &got); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the revoked credential's connection to close", c2.nc.IsClosed)
	select { // the watch ends with its connection, not waiting forever
	case _, open := <-events:
		if open {
			t.Fatal("an event reached a revoked credential's watch")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the revoked credential's watch did not end")
	}
	if _, err := s.dial(t, "initech", second, "_INBOX_initech"); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect with the revoked credential: %v, want an authorization violation", err)
	}
	c1.must(bus.ResourceSecrets, "list", api.ListRequest{}, &list)

	if err := s.AdminCall(tenants.Subject("revoke"), api.TenantRevokeRequest{ID: "initech"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.State != api.TenantRevoked || got.RevokedAt == nil {
		t.Fatalf("revoked tenant: %+v", got)
	}
	eventually(t, "the tenant's last connection to close", c1.nc.IsClosed)
	if _, err := s.dial(t, "initech", first, "_INBOX_initech"); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect to a revoked tenant: %v, want an authorization violation", err)
	}
	err = s.AdminCall(tenants.Subject("credentials"), api.TenantCredentialsRequest{ID: "initech", Name: "third",
		Scopes: []string{string(api.ScopeAdmin)}}, nil)
	wantCode(t, "a credential of a revoked tenant", err, api.CodeInvalidState, "")
	wantCode(t, "the id of a revoked tenant again", s.AdminCall(tenants.Subject("create"), api.TenantCreateRequest{ID: "initech"}, nil),
		api.CodeAlreadyExists, "id")
}

// The limits set at creation are nats-server's: a connection past the
// tenant's connection limit and a subscription past its subscription limit
// are refused.
func TestTenantLimitsRefuseTheExcess(t *testing.T) {
	s := startStack(t)
	s.CreateTenant(t, api.TenantCreateRequest{ID: "small", Limits: &api.TenantLimits{Connections: 2, Subscriptions: 3,
		PayloadBytes: 4096}})
	creds := s.MintCreds(t, "small", "cli", api.ScopeAdmin)
	c := s.connect(t, "small", creds, "_INBOX_small")
	s.connect(t, "small", creds, "_INBOX_small")
	if _, err := s.dial(t, "small", creds, "_INBOX_small"); !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
		t.Fatalf("a third connection: %v, want %v", err, nats.ErrMaxAccountConnectionsExceeded)
	}
	for _, subject := range []string{bus.EventsOf("small"), "_INBOX_small.a", "_INBOX_small.b"} {
		if _, err := c.nc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.nc.SubscribeSync("_INBOX_small.c"); err != nil {
		t.Fatal(err)
	}
	c.denied.wait(t, nats.ErrMaxSubscriptionsExceeded.Error())
	if mp := c.nc.MaxPayload(); mp != 4096 {
		t.Fatalf("max payload of the tenant's connection: %d, want 4096", mp)
	}

	for _, tc := range []struct {
		limits api.TenantLimits
		path   string
	}{
		{api.TenantLimits{Connections: 0, Subscriptions: 1, PayloadBytes: 1}, "limits.connections"},
		{api.TenantLimits{Connections: 1, Subscriptions: -2, PayloadBytes: 1}, "limits.subscriptions"},
		{api.TenantLimits{Connections: 1, Subscriptions: 1, PayloadBytes: 1 << 30}, "limits.payloadBytes"},
		{api.TenantLimits{Connections: 1, Subscriptions: 1, PayloadBytes: 1, JetStreamBytes: -1}, "limits.jetStreamBytes"},
	} {
		err := s.AdminCall(tenants.Subject("create"), api.TenantCreateRequest{ID: "bad", Limits: &tc.limits}, nil)
		wantCode(t, tc.path, err, api.CodeInvalidInput, tc.path)
	}
	err := s.AdminCall(tenants.Subject("create"), api.TenantCreateRequest{ID: "bad", Quotas: &api.TenantQuotas{CreatesPerSecond: -1}}, nil)
	wantCode(t, "quotas", err, api.CodeInvalidInput, "quotas.createsPerSecond")
	err = s.AdminCall(tenants.Subject("create"), api.TenantCreateRequest{ID: "bad", Quotas: &api.TenantQuotas{ListsPerSecond: -1}}, nil)
	wantCode(t, "quotas", err, api.CodeInvalidInput, "quotas.listsPerSecond")
	wantCode(t, "id", s.AdminCall(tenants.Subject("create"), api.TenantCreateRequest{ID: "Bad.Id"}, nil), api.CodeInvalidInput, "id")
	err = s.AdminCall(tenants.Subject("credentials"), api.TenantCredentialsRequest{ID: "small", Name: "x", Scopes: []string{"compute:root"}}, nil)
	wantCode(t, "scope", err, api.CodeInvalidInput, "scopes[0]")
}

// A credential without compute:secrets:manage is refused secrets.put by
// nats-server, and the compute CLI's request path (natsauth.Denials) says
// ACCESS_DENIED naming the scope; with the scope the put is stored.
func TestScopesAreEnforcedByNATS(t *testing.T) {
	s := startStack(t)
	call := func(creds, verb string, in any) error {
		d := &natsauth.Denials{}
		nc, err := bus.Connect(bus.ConnectOptions{URL: s.URL, CredsFile: creds, InboxPrefix: "_INBOX_acme", FailFast: true,
			ErrorHandler: d.Handler})
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return d.Call(ctx, nc, bus.Command("acme", bus.ResourceSecrets, verb), in, nil)
	}
	put := api.SecretPutRequest{Name: "scoped", Value: "acme-scoped-value"}
	reader := s.MintCreds(t, "acme", "reader", api.ScopeInstancesRead, api.ScopeAccountsManage)
	err := call(reader, "put", put)
	ce := api.AsComputeError(err)
	if ce == nil || ce.Code != api.CodeAccessDenied || ce.Details.Scope != string(api.ScopeSecretsManage) {
		t.Fatalf("put without the scope: %v (details %+v), want ACCESS_DENIED naming %s", err, ce, api.ScopeSecretsManage)
	}
	writer := s.MintCreds(t, "acme", "writer", api.ScopeSecretsManage)
	if err := call(writer, "put", put); err != nil {
		t.Fatalf("put with the scope: %v", err)
	}
	acme := s.tenantClient(t, "acme")
	var list api.List[api.Secret]
	acme.must(bus.ResourceSecrets, "list", api.ListRequest{}, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "scoped" {
		t.Fatalf("acme's secrets: %+v", list.Items)
	}
}
