package accounts

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// table is one KV bucket of records keyed "<tenant>.<id>".
type table struct {
	kv jetstream.KeyValue
	// kind names the record in NOT_FOUND errors and log fields ("account", "pool").
	kind string
	// prefix is the id prefix (api.PrefixAccount, api.PrefixPool).
	prefix string
}

func (t table) key(tenant, id string) string { return tenant + "." + id }

// casAttempts bounds the tries of a read-modify-write that keeps losing its
// revision check to other writers.
const casAttempts = 5

// checkID refuses an id that is not prefix + ULID: INVALID_INPUT naming path.
// Only checked ids become key tokens, so no dot or wildcard reaches a key.
func checkID(prefix, path, id string) error {
	if !api.ValidID(prefix, id) {
		return api.InvalidInput(path, "%s must be an id of the form %s<ulid>", path, prefix)
	}
	return nil
}

// get reads the record id of tenant and its revision. Errors: INVALID_INPUT
// naming path for a malformed id, NOT_FOUND, UNAVAILABLE, INTERNAL.
func get[T any](ctx context.Context, t table, tenant, path, id string) (T, uint64, error) {
	var v T
	if err := checkID(t.prefix, path, id); err != nil {
		return v, 0, err
	}
	rev, err := bus.GetJSON(ctx, t.kv, t.key(tenant, id), &v)
	if errors.Is(err, bus.ErrNotFound) {
		return v, 0, api.NotFound(t.kind, id)
	}
	return v, rev, err
}

// mutate reads the record id of tenant, applies change and writes it back at
// the revision read, starting over when another write got in between (at
// most casAttempts times). change's own errors end it. Errors: those of get,
// of change, CONFLICT after casAttempts lost races, UNAVAILABLE.
func mutate[T any](ctx context.Context, t table, tenant, id string, change func(*T) error) (T, error) {
	for attempt := 1; ; attempt++ {
		v, rev, err := get[T](ctx, t, tenant, "id", id)
		if err != nil {
			return v, err
		}
		if err := change(&v); err != nil {
			return v, err
		}
		_, err = bus.UpdateJSON(ctx, t.kv, t.key(tenant, id), v, rev)
		if !api.IsCode(err, api.CodeConflict) || attempt == casAttempts {
			return v, err
		}
	}
}

// maxUsers bounds the ids a refused delete names in its details.
const maxUsers = 10

// usersOf returns the ids of up to maxUsers records of tenant in kv for which
// uses holds. Errors: UNAVAILABLE, INTERNAL.
func usersOf[T any](ctx context.Context, kv jetstream.KeyValue, tenant string, uses func(*T) bool, idOf func(*T) string) ([]string, error) {
	page, err := bus.ListJSON(ctx, kv, tenant+".", maxUsers, "", uses)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(page.Items))
	for i := range page.Items {
		ids = append(ids, idOf(&page.Items[i]))
	}
	return ids, nil
}

// poolsOf names the pools of tenant on account id.
func (s *service) poolsOf(ctx context.Context, tenant, id string) ([]string, error) {
	return usersOf(ctx, s.st.Pools, tenant,
		func(p *api.Pool) bool { return p.ProviderAccountID == id },
		func(p *api.Pool) string { return p.ID })
}

// instancesOf names the instances of tenant in pool id.
func (s *service) instancesOf(ctx context.Context, tenant, id string) ([]string, error) {
	return usersOf(ctx, s.st.Instances, tenant,
		func(i *api.Instance) bool { return i.PoolID == id },
		func(i *api.Instance) string { return i.ID })
}
