package accounts

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// deletePool answers pools.delete {id}. Instance creates write the instance
// first and then read the pool, so the delete marks the pool first
// (deletionRequestedAt, CAS), then looks for instances: a create either
// wrote its instance before the mark (the scan sees it and the delete is
// refused, the mark cleared) or reads the mark and takes its instance back.
// No create ever writes the pool, so creates do not contend on it. Errors:
// INVALID_INPUT (path id), NOT_FOUND, INVALID_STATE with details.instances
// naming up to 10 instances, CONFLICT, UNAVAILABLE.
func (s *service) deletePool(ctx context.Context, req *bus.Request) (any, error) {
	var in api.IDRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	if _, err := s.pools.mutate(ctx, req.Tenant, in.ID, func(p *api.Pool) error {
		p.DeletionRequestedAt = &now
		return nil
	}); err != nil {
		return nil, err
	}
	ids, err := s.instancesOf(ctx, req.Tenant, in.ID)
	if err == nil && len(ids) == 0 {
		_, rev, gerr := s.pools.get(ctx, req.Tenant, "id", in.ID)
		if err = gerr; err == nil {
			err = s.pools.Delete(ctx, req.Tenant, in.ID, rev)
		}
		if err == nil {
			req.Log.Info().Str("pool", in.ID).Msg("pool deleted")
			return api.Deleted{ID: in.ID, Deleted: true}, nil
		}
	}
	if _, uerr := s.pools.mutate(ctx, req.Tenant, in.ID, func(p *api.Pool) error {
		p.DeletionRequestedAt = nil
		return nil
	}); uerr != nil {
		req.Log.Warn().Str("pool", in.ID).Err(uerr).Msg("deletion mark not cleared; creates in the pool stay refused until a delete succeeds")
	}
	if err != nil {
		return nil, err
	}
	ce := api.Errorf(api.CodeInvalidState, "pool %s is still used by instances %v: delete them first", in.ID, ids)
	ce.Details.Instances = ids
	return nil, ce
}
