package reconciler

import (
	"context"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// bootstrapEndpoint is accounts.bootstrap, answered by the reconciler: the
// sequence it starts is an instance's (bootstrap.go), so it runs where
// instances are reconciled, resumable from the instance record.
func (r *Reconciler) bootstrapEndpoint() bus.Endpoint {
	return bus.CommandEndpoint(bus.ResourceAccounts, "bootstrap", r.bootstrapServer)
}

// bootstrapServer answers accounts.bootstrap: it checks the request and
// the pool (a host class on the named account, with access) and writes
// an instance of the pool whose machine is the server (name: the
// hostname, image: the installimage image, bootstrap spec: server number,
// drives, RAID). The reconciler then claims the server and bootstraps it.
// Errors: INVALID_INPUT (the field named: accountId, poolId, flavor, and
// those of AccountBootstrapRequest.Check), ALREADY_EXISTS (name: another
// instance of the pool has the hostname), INVALID_STATE (the pool is
// being deleted), CONFLICT (idempotency key reused), UNAVAILABLE.
func (r *Reconciler) bootstrapServer(ctx context.Context, req *bus.Request) (any, error) {
	var in api.AccountBootstrapRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := in.Check(); err != nil {
		return nil, err
	}
	pool, _, err := r.pools.Get(ctx, req.Tenant, in.PoolID)
	if api.IsCode(err, api.CodeNotFound) {
		return nil, api.InvalidInput("poolId", "pool %q not found", in.PoolID)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case !api.HostPoolClass(pool.Class):
		return nil, api.InvalidInput("poolId", "pool %s is of class %s: servers are bootstrapped into pools of class %s or %s",
			pool.ID, pool.Class, api.PoolClassMetalHost, api.PoolClassVPSHost)
	case pool.ProviderAccountID != in.AccountID:
		return nil, api.InvalidInput("accountId", "pool %s is on account %s, not %s", pool.ID, pool.ProviderAccountID, in.AccountID)
	case pool.Access == nil:
		return nil, api.InvalidInput("poolId", "pool %s has no access: a host is bootstrapped over SSH", pool.ID)
	}
	if err := refuseDeletingPool(&pool); err != nil {
		return nil, err
	}
	if in.Flavor == "" {
		in.Flavor = pool.Flavors[0].Name
	}
	if _, ok := pool.Flavor(in.Flavor); !ok {
		names := flavorNames(&pool)
		ce := api.InvalidInput("flavor", "pool %s has no flavor %q (its flavors: %s)", pool.ID, in.Flavor, strings.Join(names, ", "))
		ce.Details.Allowed = names
		return nil, ce
	}
	if in.Hostname == "" {
		in.Hostname = api.DefaultHostname(in.ServerNumber)
	}
	create := api.InstanceCreateRequest{TenantID: in.TenantID, PoolID: in.PoolID, Flavor: in.Flavor, Image: in.Image,
		Name: in.Hostname, Power: api.PowerOn, IdempotencyKey: in.IdempotencyKey}
	return r.writeInstance(ctx, req, &create, &api.BootstrapSpec{ServerNumber: in.ServerNumber, Drives: in.Drives,
		RAIDLevel: in.RAIDLevel})
}
