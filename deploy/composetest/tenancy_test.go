package composetest

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/natsauth"
	"better-compute.io/compute/services/tenants"
)

// readmeCreds is the credential file the README walkthrough names.
const readmeCreds = "./data/creds/demo.creds"

// adminCreds is the admin user's credential of compute nats-init.
func (s *stack) adminCreds() string {
	return filepath.Join(s.env["COMPUTE_AUTH_DIR"], natsauth.CredsDir, natsauth.UserAdmin+".creds")
}

// tenantCreds creates tenant through the tenants API as admin (unless it
// exists) and returns the file of a new credential of scope compute:admin.
func (s *stack) tenantCreds(c *client, tenant string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := bus.Call(ctx, c.nc, tenants.Subject("create"), api.TenantCreateRequest{ID: tenant}, nil); err != nil &&
		!api.IsCode(err, api.CodeAlreadyExists) {
		s.t.Fatalf("create tenant %s: %v", tenant, err)
	}
	var reply api.TenantCredentialsReply
	req := api.TenantCredentialsRequest{ID: tenant, Name: "composetest", Scopes: []string{string(api.ScopeAdmin)}}
	if err := bus.Call(ctx, c.nc, tenants.Subject("credentials"), req, &reply); err != nil {
		s.t.Fatalf("credential of %s: %v", tenant, err)
	}
	file := filepath.Join(s.t.TempDir(), tenant+".creds")
	if err := os.WriteFile(file, []byte(reply.Creds), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return file
}

// tenancy creates tenants acme and globex through the tenants API on the
// cluster and, with their own credentials, has each store a secret and
// see only its own; acme's publish of globex's verb is refused by the
// cluster (ACCESS_DENIED through natsauth.Denials).
func tenancy(s *stack, c *client) {
	s.t.Helper()
	call := func(creds, tenant, resource, verb string, in, out any) error {
		d := &natsauth.Denials{}
		nc, err := bus.Connect(bus.ConnectOptions{URL: hostNATSURLs, Name: "composetest-" + tenant, CredsFile: creds,
			CAFile: s.caFile(), InboxPrefix: "_INBOX_" + tenant, FailFast: true, ErrorHandler: d.Handler})
		if err != nil {
			s.t.Fatal(err)
		}
		defer nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		return d.Call(ctx, nc, bus.Command(tenant, resource, verb), in, out)
	}
	acme, globex := s.tenantCreds(c, "acme"), s.tenantCreds(c, "globex")
	for tenant, creds := range map[string]string{"acme": acme, "globex": globex} {
		if err := call(creds, tenant, bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "db", Value: "composetest-" + tenant}, nil); err != nil {
			s.t.Fatalf("%s secrets.put: %v", tenant, err)
		}
		var list api.List[api.Secret]
		if err := call(creds, tenant, bus.ResourceSecrets, "list", api.ListRequest{}, &list); err != nil || len(list.Items) != 1 ||
			list.Items[0].TenantID != tenant {
			s.t.Fatalf("%s secrets.list: %+v %v", tenant, list.Items, err)
		}
	}
	err := call(acme, "globex", bus.ResourceSecrets, "list", api.ListRequest{}, nil)
	if !api.IsCode(err, api.CodeAccessDenied) {
		s.t.Fatalf("acme listing globex's secrets: %v, want ACCESS_DENIED", err)
	}
}
