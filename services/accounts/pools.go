package accounts

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// rollbackTimeout bounds the removal of a pool whose create failed late,
// also when the request's own deadline has passed.
const rollbackTimeout = 5 * time.Second

// createPool answers pools.create: a pool of class provider with agent none
// on an account of the tenant, each flavor naming an offer of that account
// (asked from its provider, compute.internal.provider.<id>.offers). Version 1.
//
// Errors: INVALID_INPUT naming the field (see checkPoolRequest; path
// providerAccountId for an account that does not exist in this tenant,
// flavors[i].offerId for an offer the account does not have; the network,
// placement and flavor storage fields the account cannot have, as its
// provider's checkpool answers, or an address range overlapping another
// pool's: see checkPoolPlacement), ALREADY_EXISTS
// (path name) when the tenant has a pool of that name, the provider's
// errors (UNAVAILABLE when it does not answer), UNAVAILABLE.
func (s *service) createPool(ctx context.Context, req *bus.Request) (any, error) {
	var in api.PoolCreateRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := checkPoolRequest(&in); err != nil {
		return nil, err
	}
	acct, _, err := s.accounts.get(ctx, req.Tenant, "providerAccountId", in.ProviderAccountID)
	if api.IsCode(err, api.CodeNotFound) {
		return nil, unknownAccount(in.ProviderAccountID)
	}
	if err != nil {
		return nil, err
	}
	if err := s.checkOffers(ctx, &acct, in.Flavors); err != nil {
		return nil, err
	}
	if err := s.checkPoolPlacement(ctx, &acct, &in); err != nil {
		return nil, err
	}
	if err := s.checkAccessKey(ctx, req.Tenant, in.Access); err != nil {
		return nil, err
	}
	// after the input is valid: a bad request is INVALID_INPUT, whatever its name
	if err := refuseTakenName(ctx, s.pools, req.Tenant, in.Name, "", poolIDName); err != nil {
		return nil, err
	}
	p := api.Pool{ID: api.NewID(api.PrefixPool), TenantID: req.Tenant, Name: in.Name, SiteID: in.SiteID,
		Class: in.Class, ProviderAccountID: acct.ID, Agent: in.Agent, Flavors: in.Flavors, Access: in.Access,
		Network: in.Network, Placement: in.Placement, Release: in.Release, Version: 1, CreatedAt: time.Now().UTC()}
	rev, err := s.pools.Create(ctx, req.Tenant, p.ID, p)
	if err != nil {
		return nil, err
	}
	if err := s.holdAccount(ctx, req.Tenant, acct.ID); err != nil {
		s.rollback(ctx, req.Tenant, p.ID, rev, req.Log)
		if api.IsCode(err, api.CodeNotFound) {
			return nil, unknownAccount(acct.ID)
		}
		return nil, err
	}
	// again after the write: a secrets.delete that scanned before it sees it
	if err := s.checkAccessKey(ctx, req.Tenant, p.Access); err != nil {
		s.rollback(ctx, req.Tenant, p.ID, rev, req.Log)
		return nil, err
	}
	req.Log.Info().Str("pool", p.ID).Str("account", acct.ID).Int("flavors", len(p.Flavors)).Msg("pool created")
	return p, nil
}

func unknownAccount(id string) error {
	return api.InvalidInput("providerAccountId", "provider account %q does not exist", id)
}

// checkOffers refuses a flavor whose offer the account's provider does not
// list for the account: INVALID_INPUT path flavors[i].offerId.
func (s *service) checkOffers(ctx context.Context, a *api.Account, flavors []api.Flavor) error {
	offers, err := s.offers(ctx, a, api.OfferQuery{})
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(offers))
	for _, o := range offers {
		known[o.ID] = true
	}
	for i, f := range flavors {
		if !known[f.OfferID] {
			return api.InvalidInput(fmt.Sprintf("flavors[%d].offerId", i), "offer %q is not an offer of account %s", f.OfferID, a.ID)
		}
	}
	return nil
}

// holdAccount rewrites account id unchanged. An account delete that scanned
// for pools before the new pool was written deletes at the revision it read,
// so this write makes it fail instead of leaving the pool orphaned; if the
// delete came first, this fails with NOT_FOUND.
func (s *service) holdAccount(ctx context.Context, tenant, id string) error {
	_, err := s.accounts.mutate(ctx, tenant, id, func(*api.Account) error { return nil })
	return err
}

// rollback deletes the pool id of tenant just written, revision rev. A
// failure is logged: the pool then stays, and its account may be gone.
func (s *service) rollback(ctx context.Context, tenant, id string, rev uint64, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err := s.pools.Delete(ctx, tenant, id, rev); err != nil {
		log.Error().Str("pool", id).Str("error", err.Error()).Msg("pool create failed and its record could not be removed")
	}
}
