package secrets

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// referencingAccounts returns the ids of the tenant's accounts (bucket
// compute_accounts, keys <tenant>.<accountId>) whose config holds ref
// anywhere. Only the tenant's own accounts are read: another tenant's
// account cannot resolve the reference anyway. Errors: UNAVAILABLE, INTERNAL.
func referencingAccounts(ctx context.Context, accounts bus.Reader[api.Account], tenant, ref string) ([]string, error) {
	var ids []string
	err := accounts.Each(ctx, tenant, func(_, id string, acct api.Account, _ uint64) error {
		if holdsRef(acct.Config, ref) {
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// referencingPools returns the ids of the tenant's pools (bucket
// compute_pools, keys <tenant>.<poolId>) whose access names ref as the
// platform's private key (access.privateKey): their machines are reached
// with it. Errors: UNAVAILABLE, INTERNAL.
func referencingPools(ctx context.Context, pools bus.Reader[api.Pool], tenant, ref string) ([]string, error) {
	var ids []string
	err := pools.Each(ctx, tenant, func(_, id string, pool api.Pool, _ uint64) error {
		if pool.Access != nil && pool.Access.PrivateKey == ref {
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
