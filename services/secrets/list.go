package secrets

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// list pages through the tenant's secrets (secrets.list), metadata only:
// records decode as api.Secret, which has no value field; the page's ids
// come from the replica's list index (s.metadata), so a page costs its own
// records whatever the tenant holds, and holds every secret put before the
// list. Errors: INVALID_INPUT (body, limit), UNAVAILABLE, INTERNAL.
func (s *service) list(ctx context.Context, req *bus.Request) (any, error) {
	var in api.ListRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	return s.metadata.List(ctx, req.Tenant, in.Limit, in.Cursor, nil, nil)
}
