package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/natsauth"
	"better-compute.io/compute/services/tenants"
)

// adminCall sends one request of the tenants service (operator only: run
// with the admin user's credentials) and decodes its reply into out.
func (g *globals) adminCall(verb string, in, out any) error {
	nc, err := g.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	return g.denials.Call(ctx, nc, tenants.Subject(verb), in, out)
}

// showTenant sends verb of the tenants service and shows the tenant it
// answers in g's format (-o).
func (g *globals) showTenant(verb string, in any) error {
	var t api.Tenant
	if err := g.adminCall(verb, in, &t); err != nil {
		return err
	}
	return showOne(g, tenantView, t)
}

// tenantView is how tenants print: credentials counts those not revoked.
var tenantView = view[api.Tenant]{
	id: func(t *api.Tenant) string { return t.ID },
	columns: []column[api.Tenant]{
		{name: "ID", value: func(t *api.Tenant) string { return t.ID }},
		{name: "STATE", value: func(t *api.Tenant) string { return t.State }},
		{name: "CREDENTIALS", value: func(t *api.Tenant) string {
			n := 0
			for _, c := range t.Credentials {
				if c.RevokedAt == nil {
					n++
				}
			}
			return strconv.Itoa(n)
		}},
		{name: "CONNECTIONS", value: func(t *api.Tenant) string { return strconv.FormatInt(t.Limits.Connections, 10) }},
		{name: "CREATED", value: func(t *api.Tenant) string { return timestamp(t.CreatedAt) }},
		{name: "ACCOUNT", wide: true, value: func(t *api.Tenant) string { return t.Account }},
	},
}

// credentialView is how a minted credential prints (its creds file is
// written, never printed).
var credentialView = view[api.TenantCredential]{
	id: func(c *api.TenantCredential) string { return c.ID },
	columns: []column[api.TenantCredential]{
		{name: "NAME", value: func(c *api.TenantCredential) string { return c.Name }},
		{name: "SCOPES", value: func(c *api.TenantCredential) string {
			scopes := make([]string, len(c.Scopes))
			for i, sc := range c.Scopes {
				scopes[i] = string(sc)
			}
			return strings.Join(scopes, ",")
		}},
		{name: "CREATED", value: func(c *api.TenantCredential) string { return timestamp(c.CreatedAt) }},
		{name: "ID", wide: true, value: func(c *api.TenantCredential) string { return c.ID }},
	},
}

func tenantsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "tenants", Short: "Tenants, their NATS accounts, limits and credentials (operator only: admin credentials)"}

	var req api.TenantCreateRequest
	limits, quotas := api.DefaultTenantLimits, api.TenantQuotas{}
	create := &cobra.Command{
		Use:     "create TENANT",
		Short:   "Create a tenant: its NATS account, with limits and quotas, takes effect at once",
		Example: `  compute --creds data/nats-auth/creds/admin.creds tenants create acme --connections 50`,
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			req.ID, req.Limits, req.Quotas = args[0], &limits, &quotas
			return g.showTenant("create", req)
		},
	}
	f := create.Flags()
	f.Int64Var(&limits.Connections, "connections", limits.Connections, "connections at once (-1: no limit)")
	f.Int64Var(&limits.Subscriptions, "subscriptions", limits.Subscriptions, "subscriptions per connection (-1: no limit)")
	f.Int64Var(&limits.PayloadBytes, "payload-bytes", limits.PayloadBytes, "largest message in bytes (-1: the server's)")
	f.Int64Var(&limits.JetStreamBytes, "jetstream-bytes", 0, "JetStream file storage of the tenant's own (0: none)")
	f.Int64Var(&quotas.Instances, "quota-instances", 0, "instances at once (0: none; refused CAPACITY_UNAVAILABLE beyond)")
	f.Int64Var(&quotas.InstancesPerPool, "quota-instances-per-pool", 0, "instances of one pool (0: none; refused CAPACITY_UNAVAILABLE beyond)")
	f.Int64Var(&quotas.CreatesPerSecond, "quota-creates-per-second", 0,
		"instance creates per second, per reconciler replica (0: none; refused RATE_LIMITED beyond)")
	f.Int64Var(&quotas.ConcurrentLists, "quota-concurrent-lists", 0,
		"lists at once, of every resource, per service replica (0: none; refused RATE_LIMITED beyond)")
	f.Int64Var(&quotas.ListsPerSecond, "quota-lists-per-second", 0,
		"lists (pages) per second, of every resource, per service replica (0: none; refused RATE_LIMITED beyond)")

	get := &cobra.Command{
		Use: "get TENANT", Short: "Show a tenant", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.showTenant("get", api.IDRequest{ID: args[0]})
		},
	}
	var list api.ListRequest
	ls := &cobra.Command{
		Use: "list", Short: "List tenants", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var page api.List[api.Tenant]
			if err := g.adminCall("list", list, &page); err != nil {
				return err
			}
			return show(g, tenantView, page, page.Items, page.NextCursor)
		},
	}
	ls.Flags().IntVar(&list.Limit, "limit", 0, "page size (default 100)")
	ls.Flags().StringVar(&list.Cursor, "cursor", "", "nextCursor of the previous page")

	var credential string
	revoke := &cobra.Command{
		Use:   "revoke TENANT",
		Short: "Revoke a tenant (every credential, for good) or, with --credential, one credential; their connections are closed",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.showTenant("revoke", api.TenantRevokeRequest{ID: args[0], Credential: credential})
		},
	}
	revoke.Flags().StringVar(&credential, "credential", "", "the credential's id (its public key, U…) to revoke alone")

	creds := credentialsCmd(g)
	c.AddCommand(create, get, ls, revoke, creds)
	return c
}

// credentialsCmd is `tenants credentials`: mints a credential with scopes
// and writes its creds file (mode 0600), printing the credential's record.
func credentialsCmd(g *globals) *cobra.Command {
	var name, out string
	var scopes []string
	cmd := &cobra.Command{
		Use:     "credentials TENANT --scope SCOPE... --out FILE",
		Short:   "Mint a credential of a tenant with scopes and write its creds file",
		Example: `  compute tenants credentials acme --name ci --scope compute:instances:read --out ci.creds`,
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if out == "" {
				return api.InvalidInput("--out", "--out names the creds file to write")
			}
			var reply api.TenantCredentialsReply
			if err := g.adminCall("credentials", api.TenantCredentialsRequest{ID: args[0], Name: name, Scopes: scopes}, &reply); err != nil {
				return err
			}
			if err := writeCreds(out, reply.Creds); err != nil {
				return err
			}
			return showOne(g, credentialView, reply.Credential)
		},
	}
	cmd.Flags().StringVar(&name, "name", "cli", "name of the credential")
	cmd.Flags().StringArrayVar(&scopes, "scope", nil,
		"a scope the credential holds, repeatable (docs/user-guide.md: Tenants, credentials and scopes)")
	cmd.Flags().StringVar(&out, "out", "", "file to write the creds to (mode 0600)")
	return cmd
}

// writeCreds writes a creds file (mode 0600), never over another file's
// mode: it is replaced.
func writeCreds(path, creds string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(creds), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// natsInitCmd is `compute nats-init`: natsauth.Init into --out.
func natsInitCmd(g *globals) *cobra.Command {
	var o natsauth.InitOptions
	var dir string
	cmd := &cobra.Command{
		Use:   "nats-init",
		Short: "Write the operator-mode keys, JWTs, service credentials and nats-server auth include (keeps existing keys)",
		Long: "Makes --out an authority directory (pkg/natsauth): keys/ (operator signing key and issuer key, secret),\n" +
			"operator.jwt, sys.jwt, services.jwt, creds/<user>.creds for the admin and every service user, and\n" +
			"nats-auth.conf, the include of deploy/nats.conf. A second run keeps the keys and accounts and\n" +
			"writes the rest again.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			a, err := natsauth.Init(dir, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.out, "wrote %s (operator %s, SERVICES account %s)\n", dir, a.Operator, a.Services)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "out", "deploy/auth", "authority directory")
	cmd.Flags().StringVar(&o.ResolverDir, "resolver-dir", "/data/jwt", "directory of nats-server's account resolver")
	return cmd
}
