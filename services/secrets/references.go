package secrets

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// holders are the tenant's records that hold a secret reference, so that
// secrets.delete refuses to delete what they name: provider accounts (any
// string of their config, at any depth) and pools (their access.privateKey).
// Only the tenant's own records are read: another tenant's cannot resolve
// the reference anyway.
type holders struct {
	accounts bus.Reader[api.Account] // compute_accounts, keys <tenant>.<accountId>
	pools    bus.Reader[api.Pool]    // compute_pools, keys <tenant>.<poolId>
}

// of returns the ids of the tenant's accounts and pools that hold ref
// (nil when none). A pool holds its key until it is deleted: pools.update
// does not change access. Errors: UNAVAILABLE, INTERNAL.
func (h holders) of(ctx context.Context, tenant, ref string) (accounts, pools []string, err error) {
	accounts, err = holding(ctx, h.accounts, tenant, func(a api.Account) bool { return holdsRef(a.Config, ref) })
	if err != nil {
		return nil, nil, err
	}
	pools, err = holding(ctx, h.pools, tenant, func(p api.Pool) bool { return p.Access != nil && p.Access.PrivateKey == ref })
	return accounts, pools, err
}

// holding returns the ids of the tenant's records of r for which holds is
// true. Errors: those of Reader.Each.
func holding[T any](ctx context.Context, r bus.Reader[T], tenant string, holds func(T) bool) ([]string, error) {
	var ids []string
	err := r.Each(ctx, tenant, func(_, id string, v T, _ uint64) error {
		if holds(v) {
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// holdsRef walks a decoded JSON value (objects, arrays, at any depth) for a
// string equal to ref.
func holdsRef(v any, ref string) bool {
	switch x := v.(type) {
	case string:
		return x == ref
	case map[string]any:
		for _, item := range x {
			if holdsRef(item, ref) {
				return true
			}
		}
	case []any:
		for _, item := range x {
			if holdsRef(item, ref) {
				return true
			}
		}
	}
	return false
}
