package secrets

import (
	"context"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// delete removes a secret (secrets.delete). Errors: INVALID_INPUT (id),
// NOT_FOUND, INVALID_STATE with details.accounts and details.pools (ids
// of the tenant's accounts whose config references the secret, and of
// its pools whose access.privateKey is it), CONFLICT (the record kept
// changing), UNAVAILABLE, INTERNAL.
//
// An account or pool written between the reference check and the delete
// may still name the secret; its calls then fail with NOT_FOUND from
// resolve (for a pool: Configured False with reason NOT_FOUND), a clear
// error rather than a leak. The delete is a revision CAS; the only writer
// that changes a stored secret is a rekey re-sealing it, so on a conflict
// the delete reads the new revision and tries again (Table.Remove).
func (s *service) delete(ctx context.Context, req *bus.Request) (any, error) {
	var in api.IDRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	switch {
	case in.ID == "":
		return nil, api.InvalidInput("id", "id is required")
	case !api.ValidID(api.PrefixSecret, in.ID):
		return nil, api.InvalidInput("id", "id must be a secret id (sec_<ulid>)")
	}
	if _, _, err := s.local.read(ctx, req.Tenant, in.ID); err != nil {
		return nil, err
	}
	accounts, err := referencingAccounts(ctx, s.accounts, req.Tenant, secretRef(req.Tenant, in.ID))
	if err != nil {
		return nil, err
	}
	pools, err := referencingPools(ctx, s.pools, req.Tenant, secretRef(req.Tenant, in.ID))
	if err != nil {
		return nil, err
	}
	if len(accounts) > 0 || len(pools) > 0 {
		var by []string
		if len(accounts) > 0 {
			by = append(by, "provider account(s) "+strings.Join(accounts, ", "))
		}
		if len(pools) > 0 {
			by = append(by, "pool(s) "+strings.Join(pools, ", ")+" (access.privateKey)")
		}
		ce := api.Errorf(api.CodeInvalidState, "secret %s is referenced by %s; remove the references first",
			in.ID, strings.Join(by, " and "))
		ce.Details.Accounts, ce.Details.Pools = accounts, pools
		return nil, ce
	}
	if err := s.local.secrets.Remove(ctx, req.Tenant, in.ID); err != nil {
		return nil, err
	}
	req.Log.Info().Str("secret_id", in.ID).Msg("secret deleted")
	return api.Deleted{ID: in.ID, Deleted: true}, nil
}
