package client

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// SecretClient is the secrets verbs (services/secrets).
type SecretClient struct{ c *Client }

// Put stores a credential and returns its metadata with its reference
// (secret://<tenant>/<id>); the value is never returned. A repeated put
// with the same IdempotencyKey and value answers the same secret.
// Errors: INVALID_INPUT (path name, value, idempotencyKey), CONFLICT for an
// idempotency key reused with another value, UNAVAILABLE.
func (s SecretClient) Put(ctx context.Context, req api.SecretPutRequest) (api.Secret, error) {
	return call[api.Secret](ctx, s.c, bus.ResourceSecrets, "put", req)
}

// List returns one page of the tenant's secrets (metadata only).
// Errors: INVALID_INPUT (path limit, cursor), UNAVAILABLE.
func (s SecretClient) List(ctx context.Context, req api.ListRequest) (api.List[api.Secret], error) {
	return call[api.List[api.Secret]](ctx, s.c, bus.ResourceSecrets, "list", req)
}

// All returns every secret of the tenant, paging through List.
func (s SecretClient) All(ctx context.Context) ([]api.Secret, error) {
	return all(ctx, func(ctx context.Context, cursor string) (api.List[api.Secret], error) {
		return s.List(ctx, api.ListRequest{Limit: pageSize, Cursor: cursor})
	})
}

// Delete deletes secret id. Errors: INVALID_INPUT (path id), NOT_FOUND,
// INVALID_STATE while accounts use it (details.accounts), UNAVAILABLE.
func (s SecretClient) Delete(ctx context.Context, id string) (api.Deleted, error) {
	return call[api.Deleted](ctx, s.c, bus.ResourceSecrets, "delete", api.IDRequest{ID: id})
}

// Resolve returns the id of the secret handle names: handle itself when it
// is a secret id, else the id of the one secret called handle. Errors:
// NOT_FOUND, INVALID_INPUT (details.candidates) when several have the name.
func (s SecretClient) Resolve(ctx context.Context, handle string) (string, error) {
	return resolve(ctx, api.PrefixSecret, "secret", handle, s.All,
		func(v *api.Secret) (string, string) { return v.ID, v.Name })
}

// AccountClient is the accounts verbs (services/accounts).
type AccountClient struct{ c *Client }

// Create registers a provider account; config credentials must be secret
// references. Errors: INVALID_INPUT (path provider, name, a plain secret),
// INVALID_CONFIG (path of the field; details.allowed lists the fields of
// the provider for an unknown one), ALREADY_EXISTS (path name) when the
// tenant has an account of that name, the secrets service's code for a
// reference that does not resolve, UNAVAILABLE.
func (a AccountClient) Create(ctx context.Context, req api.AccountCreateRequest) (api.Account, error) {
	return call[api.Account](ctx, a.c, bus.ResourceAccounts, "create", req)
}

// Get returns account id. Errors: INVALID_INPUT (path id), NOT_FOUND, UNAVAILABLE.
func (a AccountClient) Get(ctx context.Context, id string) (api.Account, error) {
	return call[api.Account](ctx, a.c, bus.ResourceAccounts, "get", api.IDRequest{ID: id})
}

// List returns one page of the tenant's accounts in id order.
// Errors: INVALID_INPUT (path limit, cursor), UNAVAILABLE.
func (a AccountClient) List(ctx context.Context, req api.ListRequest) (api.List[api.Account], error) {
	return call[api.List[api.Account]](ctx, a.c, bus.ResourceAccounts, "list", req)
}

// All returns every account of the tenant, paging through List.
func (a AccountClient) All(ctx context.Context) ([]api.Account, error) {
	return all(ctx, func(ctx context.Context, cursor string) (api.List[api.Account], error) {
		return a.List(ctx, api.ListRequest{Limit: pageSize, Cursor: cursor})
	})
}

// Update changes an account's name or config if req.Version is still its
// version. Errors: those of Create, NOT_FOUND, CONFLICT (path version;
// details.version the stored one).
func (a AccountClient) Update(ctx context.Context, req api.AccountUpdateRequest) (api.Account, error) {
	return call[api.Account](ctx, a.c, bus.ResourceAccounts, "update", req)
}

// Delete deletes account id. Errors: INVALID_INPUT (path id), NOT_FOUND,
// INVALID_STATE while pools use it (details.pools), CONFLICT, UNAVAILABLE.
func (a AccountClient) Delete(ctx context.Context, id string) (api.Deleted, error) {
	return call[api.Deleted](ctx, a.c, bus.ResourceAccounts, "delete", api.IDRequest{ID: id})
}

// Offers returns the offers account id's provider lists for it, filtered
// by q (in the provider's order). Errors: INVALID_INPUT (path id),
// NOT_FOUND, the provider's errors, UNAVAILABLE.
func (a AccountClient) Offers(ctx context.Context, id string, q api.OfferQuery) ([]api.Offer, error) {
	return a.PoolOffers(ctx, id, "", q)
}

// PoolOffers is Offers for pool poolID of account id ("": none): an
// offer's available is then for where that pool's creates place. Errors:
// those of Offers; INVALID_INPUT (poolId) for a pool of another account,
// NOT_FOUND for no such pool.
func (a AccountClient) PoolOffers(ctx context.Context, id, poolID string, q api.OfferQuery) ([]api.Offer, error) {
	l, err := call[api.List[api.Offer]](ctx, a.c, bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: id, PoolID: poolID, Query: q})
	return l.Items, err
}

// Resolve returns the id of the account handle names (an account id, or
// the name of one account). Errors: NOT_FOUND, INVALID_INPUT
// (details.candidates) when several have the name.
func (a AccountClient) Resolve(ctx context.Context, handle string) (string, error) {
	return resolve(ctx, api.PrefixAccount, "account", handle, a.All,
		func(v *api.Account) (string, string) { return v.ID, v.Name })
}

// PoolClient is the pools verbs (services/accounts).
type PoolClient struct{ c *Client }

// Create creates a pool whose flavors name offers of its account.
// Errors: INVALID_INPUT naming the field (providerAccountId for an unknown
// account, flavors[i].offerId for an unknown offer), ALREADY_EXISTS (path
// name) when the tenant has a pool of that name, the provider's errors,
// UNAVAILABLE.
func (p PoolClient) Create(ctx context.Context, req api.PoolCreateRequest) (api.Pool, error) {
	return call[api.Pool](ctx, p.c, bus.ResourcePools, "create", req)
}

// Get returns pool id. Errors: INVALID_INPUT (path id), NOT_FOUND, UNAVAILABLE.
func (p PoolClient) Get(ctx context.Context, id string) (api.Pool, error) {
	return call[api.Pool](ctx, p.c, bus.ResourcePools, "get", api.IDRequest{ID: id})
}

// List returns one page of the tenant's pools in id order.
// Errors: INVALID_INPUT (path limit, cursor), UNAVAILABLE.
func (p PoolClient) List(ctx context.Context, req api.ListRequest) (api.List[api.Pool], error) {
	return call[api.List[api.Pool]](ctx, p.c, bus.ResourcePools, "list", req)
}

// All returns every pool of the tenant, paging through List.
func (p PoolClient) All(ctx context.Context) ([]api.Pool, error) {
	return all(ctx, func(ctx context.Context, cursor string) (api.List[api.Pool], error) {
		return p.List(ctx, api.ListRequest{Limit: pageSize, Cursor: cursor})
	})
}

// Delete deletes pool id. Errors: INVALID_INPUT (path id), NOT_FOUND,
// INVALID_STATE while it has instances (details.instances), UNAVAILABLE.
func (p PoolClient) Delete(ctx context.Context, id string) (api.Deleted, error) {
	return call[api.Deleted](ctx, p.c, bus.ResourcePools, "delete", api.IDRequest{ID: id})
}

// Update changes a pool's sizes, template or rollout (pools.update): a
// template other than the current one is a new revision, rolled over the
// pool by the pool controller. Errors: INVALID_INPUT naming the field
// (sizes.<flavor>, template.image, template.labels.<key>, rollout.*),
// NOT_FOUND, CONFLICT (path version), INVALID_STATE while the pool is
// being deleted, UNAVAILABLE.
func (p PoolClient) Update(ctx context.Context, req api.PoolUpdateRequest) (api.Pool, error) {
	return call[api.Pool](ctx, p.c, bus.ResourcePools, "update", req)
}

// Rollback makes a new revision of pool req.ID from an earlier revision's
// template (pools.rollback; default the one before the current).
// Errors: INVALID_INPUT (path revision), INVALID_STATE (no earlier
// revision), NOT_FOUND, CONFLICT (path version), UNAVAILABLE.
func (p PoolClient) Rollback(ctx context.Context, req api.PoolRollbackRequest) (api.Pool, error) {
	return call[api.Pool](ctx, p.c, bus.ResourcePools, "rollback", req)
}

// Resolve returns the id of the pool handle names (a pool id, or the name
// of one pool). Errors: NOT_FOUND, INVALID_INPUT (details.candidates) when
// several have the name.
func (p PoolClient) Resolve(ctx context.Context, handle string) (string, error) {
	return resolve(ctx, api.PrefixPool, "pool", handle, p.All,
		func(v *api.Pool) (string, string) { return v.ID, v.Name })
}

// ProviderClient is the tenant view of the providers (services/accounts
// answers it from each provider's describe).
type ProviderClient struct{ c *Client }

// List returns every provider serving now: id, version, capabilities and
// config fields. Errors: UNAVAILABLE.
func (p ProviderClient) List(ctx context.Context) ([]api.ProviderInfo, error) {
	l, err := call[api.List[api.ProviderInfo]](ctx, p.c, bus.ResourceProviders, "list", api.ListRequest{})
	return l.Items, err
}

// Describe returns provider id: its config fields (types, defaults, which
// are secrets) and capabilities. Errors: INVALID_INPUT (path id) for a
// malformed id, NOT_FOUND when no such provider serves, UNAVAILABLE.
func (p ProviderClient) Describe(ctx context.Context, id string) (api.ProviderInfo, error) {
	return call[api.ProviderInfo](ctx, p.c, bus.ResourceProviders, "describe", api.IDRequest{ID: id})
}
