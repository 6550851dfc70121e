package accounts

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// getHandler answers <resource>.get {id} with the record of t.
// Errors: INVALID_INPUT (path id), NOT_FOUND, UNAVAILABLE.
func getHandler[T any](t table[T]) bus.Handler {
	return func(ctx context.Context, req *bus.Request) (any, error) {
		var in api.IDRequest
		if err := req.Decode(&in); err != nil {
			return nil, err
		}
		v, _, err := t.get(ctx, req.Tenant, "id", in.ID)
		if err != nil {
			return nil, err
		}
		return v, nil
	}
}

// listHandler answers <resource>.list {limit?, cursor?} with one page of the
// tenant's records of t in id order, its ids from t's list index (every
// record written before the list). Errors: INVALID_INPUT (path limit),
// UNAVAILABLE.
func listHandler[T any](t table[T]) bus.Handler {
	return func(ctx context.Context, req *bus.Request) (any, error) {
		var in api.ListRequest
		if err := req.Decode(&in); err != nil {
			return nil, err
		}
		return t.list.List(ctx, req.Tenant, in.Limit, in.Cursor, nil, nil)
	}
}

// deleteHandler answers <resource>.delete {id}: it deletes the record of t
// unless users names records that still use it. Errors: INVALID_INPUT (path
// id), NOT_FOUND, INVALID_STATE naming up to 10 users in the details field
// setUsers fills (usersKey in its message), CONFLICT when the record changed
// during the delete, UNAVAILABLE.
func deleteHandler[T any](t table[T], usersKey string, setUsers func(*api.ErrorDetails, []string),
	users func(ctx context.Context, tenant, id string) ([]string, error)) bus.Handler {
	return func(ctx context.Context, req *bus.Request) (any, error) {
		var in api.IDRequest
		if err := req.Decode(&in); err != nil {
			return nil, err
		}
		// Only the revision matters: the delete happens only if the record
		// is unchanged since before the scan for users.
		_, rev, err := t.get(ctx, req.Tenant, "id", in.ID)
		if err != nil {
			return nil, err
		}
		ids, err := users(ctx, req.Tenant, in.ID)
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			ce := api.Errorf(api.CodeInvalidState, "%s %s is still used by %s %v: delete them first", t.Kind(), in.ID, usersKey, ids)
			setUsers(&ce.Details, ids)
			return nil, ce
		}
		if err := t.Delete(ctx, req.Tenant, in.ID, rev); err != nil {
			return nil, err
		}
		req.Log.Info().Str(t.Kind(), in.ID).Msg(t.Kind() + " deleted")
		return api.Deleted{ID: in.ID, Deleted: true}, nil
	}
}
