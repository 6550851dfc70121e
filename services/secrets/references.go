package secrets

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// referencingAccounts returns the ids of the tenant's accounts (bucket
// compute_accounts, keys <tenant>.<accountId>) whose config holds ref
// anywhere. Only the tenant's own accounts are read: another tenant's
// account cannot resolve the reference anyway. Errors: UNAVAILABLE, INTERNAL.
func referencingAccounts(ctx context.Context, kv jetstream.KeyValue, tenant, ref string) ([]string, error) {
	prefix := tenant + "."
	keys, err := bus.Keys(ctx, kv, prefix)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, k := range keys {
		var acct api.Account
		if _, err := bus.GetJSON(ctx, kv, k, &acct); err != nil {
			if errors.Is(err, bus.ErrNotFound) {
				continue
			}
			return nil, err
		}
		if holdsRef(acct.Config, ref) {
			ids = append(ids, strings.TrimPrefix(k, prefix))
		}
	}
	return ids, nil
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
