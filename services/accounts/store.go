package accounts

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// table is a bus table of this service's records whose ids start with prefix.
type table[T any] struct {
	*bus.Table[T]
	// prefix is the id prefix (api.PrefixAccount, api.PrefixPool).
	prefix string
	// list is the replica's list index of the records (bus.NewListIndex):
	// a page of <resource>.list costs its own records.
	list *bus.Index[T]
}

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
func (t table[T]) get(ctx context.Context, tenant, path, id string) (T, uint64, error) {
	if err := checkID(t.prefix, path, id); err != nil {
		var zero T
		return zero, 0, err
	}
	return t.Get(ctx, tenant, id)
}

// mutate is Table.Mutate of the record id of tenant, after checking id
// (path id). Errors: INVALID_INPUT, those of Table.Mutate and change.
func (t table[T]) mutate(ctx context.Context, tenant, id string, change func(*T) error) (T, error) {
	if err := checkID(t.prefix, "id", id); err != nil {
		var zero T
		return zero, err
	}
	v, _, err := t.Mutate(ctx, tenant, id, change)
	return v, err
}

// maxUsers bounds the ids a refused delete names in its details.
const maxUsers = 10

// usersOf returns the ids of up to maxUsers records of tenant in r for which
// uses holds. Errors: UNAVAILABLE, INTERNAL.
func usersOf[T any](ctx context.Context, r bus.Reader[T], tenant string, uses func(*T) bool, idOf func(*T) string) ([]string, error) {
	page, err := r.List(ctx, tenant, maxUsers, "", uses)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(page.Items))
	for i := range page.Items {
		ids = append(ids, idOf(&page.Items[i]))
	}
	return ids, nil
}

// setPools puts the ids of the pools still using an account in details.pools.
func setPools(d *api.ErrorDetails, ids []string) { d.Pools = ids }

// poolsOf names the pools of tenant on account id.
func (s *service) poolsOf(ctx context.Context, tenant, id string) ([]string, error) {
	return usersOf(ctx, s.pools.Reader(), tenant,
		func(p *api.Pool) bool { return p.ProviderAccountID == id },
		func(p *api.Pool) string { return p.ID })
}

// instancesOf names the instances of tenant in pool id.
func (s *service) instancesOf(ctx context.Context, tenant, id string) ([]string, error) {
	return usersOf(ctx, s.instances, tenant,
		func(i *api.Instance) bool { return i.PoolID == id },
		func(i *api.Instance) string { return i.ID })
}

// refuseTakenName is ALREADY_EXISTS (path name, details.id the holder)
// when a record of t of tenant other than self is called name (an empty
// name is never taken). Names are unique per tenant from now on; records
// that already share one keep working (they are addressed by id). The
// check is a read (one KV scan, bus.Reader.Find), not a lock: two creates
// of one name at the same moment may both pass. Errors: ALREADY_EXISTS, UNAVAILABLE, INTERNAL.
func refuseTakenName[T any](ctx context.Context, t table[T], tenant, name, self string, idName func(*T) (id, name string)) error {
	if name == "" {
		return nil
	}
	found, taken, err := t.Reader().Find(ctx, tenant, func(v *T) bool {
		id, n := idName(v)
		return n == name && id != self
	})
	if err != nil || !taken {
		return err
	}
	holder, _ := idName(&found)
	ce := api.Errorf(api.CodeAlreadyExists, "name %q is taken in the tenant: %s %s has it", name, t.Kind(), holder).WithPath("name")
	ce.Details.ID = holder
	return ce
}

func accountIDName(a *api.Account) (string, string) { return a.ID, a.Name }

func poolIDName(p *api.Pool) (string, string) { return p.ID, p.Name }
