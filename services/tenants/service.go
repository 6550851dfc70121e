// Package tenants is the tenants service: tenants as data. Each tenant is a
// record in bucket compute_tenants (its NATS account's public key, its NATS
// limits, its application quotas and its credentials) and a NATS account
// whose JWT (pkg/natsauth) the service pushes to nats-server's resolver, so
// a tenant created, limited or revoked takes effect without a restart.
//
// It answers operator-only subjects of the SERVICES account, which no
// tenant account imports (only the admin user may publish there):
//
//	compute.admin.tenants.create       TenantCreateRequest → Tenant
//	compute.admin.tenants.get          IDRequest → Tenant
//	compute.admin.tenants.list         ListRequest → List[Tenant]
//	compute.admin.tenants.credentials  TenantCredentialsRequest → TenantCredentialsReply
//	compute.admin.tenants.revoke       TenantRevokeRequest → Tenant
package tenants

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/natsauth"
)

// ServiceName is the micro service name (`nats micro ls`).
const ServiceName = "tenants"

const serviceVersion = "0.1.0"

// Resource is the resource token of the tenants subjects.
const Resource = "tenants"

// Subject is the subject of a tenants verb: compute.admin.tenants.<verb>.
func Subject(verb string) string { return natsauth.AdminRoot + "." + Resource + "." + verb }

// recordTenant is the internal tenant token of the records' keys
// (_tenants.<tenantId>).
const recordTenant = bus.TenantRecords

// MaxCredentials bounds the credentials of one tenant, revoked ones
// included, so its record stays far below the store's record size.
const MaxCredentials = 200

// startTimeout bounds pushing every tenant's account at start-up.
const startTimeout = 60 * time.Second

// Options configures Start.
type Options struct {
	// Authority signs account and user JWTs (natsauth.Load). Required.
	Authority *natsauth.Authority
	// Sys is a connection of the SYS account (Authority.SysUser) that
	// pushes account JWTs. Required.
	Sys *nats.Conn
	// Workers bounds requests handled at once (default bus's).
	Workers int
	Logger  zerolog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

type service struct {
	auth    *natsauth.Authority
	sys     *nats.Conn
	tenants *bus.Table[api.Tenant]
	now     func() time.Time
	log     zerolog.Logger
}

// Start pushes the account JWT of every tenant in st.Tenants (so a
// resolver that lost its directory, or a new node, holds them all) and
// serves the tenants verbs on nc (a user of the SERVICES account). Errors:
// a missing option; UNAVAILABLE (a push failed, the store cannot be read).
func Start(nc *nats.Conn, st *bus.Stores, o Options) (*bus.Service, error) {
	if o.Authority == nil || o.Sys == nil {
		return nil, errors.New("tenants: Options.Authority and Options.Sys are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &service{auth: o.Authority, sys: o.Sys, tenants: bus.NewTable[api.Tenant](st.Tenants, "tenant"), now: o.Now, log: o.Logger}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	n := 0
	err := s.tenants.Each(ctx, recordTenant, func(_, _ string, t api.Tenant, _ uint64) error {
		n++
		return s.push(ctx, t)
	})
	if err != nil {
		return nil, fmt.Errorf("tenants: push accounts: %w", err)
	}
	s.log.Info().Int("tenants", n).Msg("tenant accounts pushed to the resolver")
	ep := func(verb string, h bus.Handler) bus.Endpoint {
		return bus.Endpoint{Name: bus.EndpointName(Resource, verb), Subject: Subject(verb), Handler: h}
	}
	return bus.StartService(nc, bus.ServiceConfig{
		Name: ServiceName, Version: serviceVersion, Description: "tenants: NATS accounts, limits, quotas and credentials",
		Workers: o.Workers, Logger: o.Logger,
		Endpoints: []bus.Endpoint{
			ep("create", s.create), ep("get", s.get), ep("list", s.list),
			ep("credentials", s.credentials), ep("revoke", s.revoke),
		},
	})
}

// push signs t's account JWT and sends it to the resolver.
func (s *service) push(ctx context.Context, t api.Tenant) error {
	token, err := s.auth.TenantAccount(t)
	if err != nil {
		return api.Errorf(api.CodeInternal, "tenant %s: %v", t.ID, err)
	}
	return natsauth.Push(ctx, s.sys, token)
}

func (s *service) create(ctx context.Context, req *bus.Request) (any, error) {
	var in api.TenantCreateRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if !api.ValidTenant(in.ID) {
		return nil, api.InvalidInput("id",
			"id %q is not a tenant id: 1 to 63 lower-case letters, digits and '-', starting with a letter or digit", in.ID)
	}
	limits := api.DefaultTenantLimits
	if in.Limits != nil {
		limits = *in.Limits
	}
	if err := checkLimits(limits); err != nil {
		return nil, err
	}
	var quotas api.TenantQuotas
	if in.Quotas != nil {
		quotas = *in.Quotas
	}
	if err := checkQuotas(quotas); err != nil {
		return nil, err
	}
	account, err := natsauth.NewAccountKey()
	if err != nil {
		return nil, api.Errorf(api.CodeInternal, "account key: %v", err)
	}
	t := api.Tenant{ID: in.ID, Account: account, State: api.TenantActive, Limits: limits, Quotas: quotas,
		Credentials: []api.TenantCredential{}, CreatedAt: s.now().UTC(), Version: 1}
	if _, err := s.tenants.Create(ctx, recordTenant, t.ID, t); err != nil {
		if api.IsCode(err, api.CodeAlreadyExists) {
			return nil, api.Errorf(api.CodeAlreadyExists, "tenant %q exists (a revoked tenant's id is not given again)", t.ID).WithPath("id")
		}
		return nil, err
	}
	if err := s.push(ctx, t); err != nil {
		return nil, err // the record stays: the next start (or a revoke) pushes it
	}
	req.Log.Info().Str("tenant", t.ID).Str("account", t.Account).Msg("tenant created")
	return t, nil
}

// checkLimits: each limit -1 (none) or positive; JetStream bytes 0 or more.
func checkLimits(l api.TenantLimits) error {
	for _, f := range []struct {
		path string
		v    int64
	}{{"limits.connections", l.Connections}, {"limits.subscriptions", l.Subscriptions}, {"limits.payloadBytes", l.PayloadBytes}} {
		if f.v == 0 || f.v < -1 {
			return api.InvalidInput(f.path, "%s must be -1 (no limit) or positive, not %d", f.path, f.v)
		}
	}
	if l.PayloadBytes > maxPayload {
		return api.InvalidInput("limits.payloadBytes", "limits.payloadBytes must be at most %d (nats-server's largest), not %d",
			maxPayload, l.PayloadBytes)
	}
	if l.JetStreamBytes < 0 {
		return api.InvalidInput("limits.jetStreamBytes", "limits.jetStreamBytes must be 0 (no JetStream) or positive, not %d", l.JetStreamBytes)
	}
	return nil
}

// maxPayload is nats-server's largest max_payload (64 MiB).
const maxPayload = 64 << 20

// checkQuotas: each quota 0 (none) or positive.
func checkQuotas(q api.TenantQuotas) error {
	for _, f := range []struct {
		path string
		v    int64
	}{{"quotas.instances", q.Instances}, {"quotas.instancesPerPool", q.InstancesPerPool},
		{"quotas.createsPerSecond", q.CreatesPerSecond}, {"quotas.concurrentLists", q.ConcurrentLists},
		{"quotas.listsPerSecond", q.ListsPerSecond}} {
		if f.v < 0 {
			return api.InvalidInput(f.path, "%s must be 0 (none) or positive, not %d", f.path, f.v)
		}
	}
	return nil
}

// lookup reads tenant id. Errors: INVALID_INPUT (path id), NOT_FOUND, UNAVAILABLE.
func (s *service) lookup(ctx context.Context, id string) (api.Tenant, uint64, error) {
	if !api.ValidTenant(id) {
		return api.Tenant{}, 0, api.InvalidInput("id", "id %q is not a tenant id", id)
	}
	return s.tenants.Get(ctx, recordTenant, id)
}

func (s *service) get(ctx context.Context, req *bus.Request) (any, error) {
	var in api.IDRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	t, _, err := s.lookup(ctx, in.ID)
	return t, err
}

// list answers compute.admin.tenants.list with a page of the tenants in
// id order. It scans (Table.List) rather than keeping a list index as the
// tenant-facing lists do: only an operator calls it, and the number of
// tenants is the operator's, not a tenant's to grow. Errors: INVALID_INPUT
// (path limit), UNAVAILABLE.
func (s *service) list(ctx context.Context, req *bus.Request) (any, error) {
	var in api.ListRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	return s.tenants.List(ctx, recordTenant, in.Limit, in.Cursor, nil)
}

// credentials mints a credential: the user JWT and seed go to the caller
// only, the record keeps its public key, name and scopes.
func (s *service) credentials(ctx context.Context, req *bus.Request) (any, error) {
	var in api.TenantCredentialsRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if !api.ValidTenant(in.Name) {
		return nil, api.InvalidInput("name", "name %q is not a credential name: 1 to 63 lower-case letters, digits and '-'", in.Name)
	}
	scopes, err := api.ParseScopes("scopes", in.Scopes)
	if err != nil {
		return nil, err
	}
	t, rev, err := s.lookup(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	var reply api.TenantCredentialsReply
	_, _, err = s.tenants.MutateAt(ctx, recordTenant, t.ID, t, rev, func(t *api.Tenant) error {
		switch {
		case t.State == api.TenantRevoked:
			return api.Errorf(api.CodeInvalidState, "tenant %q is revoked", t.ID)
		case len(t.Credentials) >= MaxCredentials:
			return api.Errorf(api.CodeInvalidState, "tenant %q holds %d credentials, the most it may", t.ID, MaxCredentials)
		case slices.ContainsFunc(t.Credentials, func(c api.TenantCredential) bool { return c.Name == in.Name && c.RevokedAt == nil }):
			return api.Errorf(api.CodeAlreadyExists, "tenant %q has a credential named %q (revoke it first)", t.ID, in.Name).WithPath("name")
		}
		creds, pub, err := s.auth.TenantUser(*t, in.Name, scopes)
		if err != nil {
			return api.Errorf(api.CodeInternal, "mint credential: %v", err)
		}
		reply.Credential = api.TenantCredential{ID: pub, Name: in.Name, Scopes: scopes, CreatedAt: s.now().UTC()}
		reply.Creds = string(creds)
		t.Credentials = append(slices.Clone(t.Credentials), reply.Credential)
		t.Version++
		return nil
	})
	if err != nil {
		return nil, err
	}
	req.Log.Info().Str("tenant", t.ID).Str("credential", reply.Credential.ID).Str("name", in.Name).Msg("credential minted")
	return reply, nil
}

// revoke revokes a credential, or the whole tenant, and pushes the account
// JWT that says so: nats-server closes the connections of what it revokes
// and refuses them from then on. A revoke of what is revoked already pushes
// again (a failed push is retried this way).
func (s *service) revoke(ctx context.Context, req *bus.Request) (any, error) {
	var in api.TenantRevokeRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if !api.ValidTenant(in.ID) {
		return nil, api.InvalidInput("id", "id %q is not a tenant id", in.ID)
	}
	now := s.now().UTC()
	t, _, err := s.tenants.Mutate(ctx, recordTenant, in.ID, func(t *api.Tenant) error {
		if in.Credential == "" {
			if t.RevokedAt == nil {
				t.State, t.RevokedAt = api.TenantRevoked, &now
				t.Version++
			}
			return nil
		}
		i := slices.IndexFunc(t.Credentials, func(c api.TenantCredential) bool { return c.ID == in.Credential })
		if i < 0 {
			return api.NotFound("credential", in.Credential).WithPath("credential")
		}
		if t.Credentials[i].RevokedAt == nil {
			t.Credentials = slices.Clone(t.Credentials)
			t.Credentials[i].RevokedAt = &now
			t.Version++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.push(ctx, t); err != nil {
		return nil, err
	}
	req.Log.Info().Str("tenant", t.ID).Str("credential", in.Credential).Msg("revoked")
	return t, nil
}
