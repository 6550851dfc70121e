package accounts

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// createAccount answers accounts.create: it validates the request (provider
// id, name, config; see validConfig) and stores a new account, version 1,
// with the config's defaults applied.
//
// Errors: INVALID_INPUT (provider, name, a plain value where a secret
// reference belongs, no provider service answering: path provider),
// ALREADY_EXISTS (path name) when the tenant has an account of that name,
// INVALID_CONFIG (path of the config field; details.allowed the fields
// that exist for an unknown one), the secrets service's code for a
// reference that does not resolve (path of the field), UNAVAILABLE.
func (s *service) createAccount(ctx context.Context, req *bus.Request) (any, error) {
	var in api.AccountCreateRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := checkProviderID(in.Provider); err != nil {
		return nil, err
	}
	if err := checkName("name", in.Name, true); err != nil {
		return nil, err
	}
	config, err := s.validConfig(ctx, req.Tenant, in.Provider, in.Config)
	if err != nil {
		return nil, err
	}
	// after the input is valid: a bad request is INVALID_INPUT, whatever its name
	if err := refuseTakenName(ctx, s.accounts, req.Tenant, in.Name, "", accountIDName); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	a := api.Account{ID: api.NewID(api.PrefixAccount), TenantID: req.Tenant, Provider: in.Provider,
		Name: in.Name, Config: config, Version: 1, CreatedAt: now, UpdatedAt: now}
	rev, err := s.accounts.Create(ctx, req.Tenant, a.ID, a)
	if err != nil {
		return nil, err
	}
	// again after the write: a secrets.delete that scanned before it sees it
	if err := s.checkSecrets(ctx, req.Tenant, config); err != nil {
		s.undo(ctx, a, rev, nil, req.Log)
		return nil, err
	}
	req.Log.Info().Str("account", a.ID).Str("provider", a.Provider).Int64("version", a.Version).
		Strs("config_fields", slices.Sorted(maps.Keys(config))).Msg("account created")
	return a, nil
}

// updateAccount answers accounts.update {id, version, name?, config?}: a
// non-empty name replaces the name, a config (validated as on create)
// replaces the config; the version increments.
//
// Errors: INVALID_INPUT (id, version, name, plain secrets), NOT_FOUND,
// CONFLICT (path version) when version is not the stored version,
// ALREADY_EXISTS (path name) when another account of the tenant has the
// new name, and those of validConfig.
func (s *service) updateAccount(ctx context.Context, req *bus.Request) (any, error) {
	var in api.AccountUpdateRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	current, _, err := s.accounts.get(ctx, req.Tenant, "id", in.ID)
	if err != nil {
		return nil, err
	}
	if in.Version < 1 {
		return nil, api.InvalidInput("version", "version is required: the version of the account you read")
	}
	if err := checkVersion(&current, in.Version); err != nil {
		return nil, err
	}
	if err := checkName("name", in.Name, false); err != nil {
		return nil, err
	}
	if err := refuseTakenName(ctx, s.accounts, req.Tenant, in.Name, in.ID, accountIDName); err != nil {
		return nil, err
	}
	var config map[string]any
	if in.Config != nil {
		if config, err = s.validConfig(ctx, req.Tenant, current.Provider, in.Config); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC()
	var before api.Account
	a, rev, err := s.accounts.Mutate(ctx, req.Tenant, in.ID, func(a *api.Account) error { // id checked by get
		if err := checkVersion(a, in.Version); err != nil {
			return err
		}
		before = *a
		if in.Name != "" {
			a.Name = in.Name
		}
		if config != nil {
			a.Config = config
		}
		a.Version++
		a.UpdatedAt = now
		return nil
	})
	if err != nil {
		return nil, err
	}
	if config != nil {
		// again after the write, as on create
		if err := s.checkSecrets(ctx, req.Tenant, config); err != nil {
			s.undo(ctx, a, rev, &before, req.Log)
			return nil, err
		}
	}
	req.Log.Info().Str("account", a.ID).Int64("version", a.Version).
		Strs("config_fields", slices.Sorted(maps.Keys(config))).Msg("account updated")
	return a, nil
}

// undo takes back the write of account a (written at revision rev) whose
// secret references stopped resolving (a secrets.delete got in): it
// deletes a created account (before nil) at rev, or writes before back
// over an update while the account is still at a's version. A failure is
// logged: the account then stays as written.
func (s *service) undo(ctx context.Context, a api.Account, rev uint64, before *api.Account, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	var err error
	if before == nil {
		err = s.accounts.Delete(ctx, a.TenantID, a.ID, rev)
	} else {
		_, _, err = s.accounts.MutateAt(ctx, a.TenantID, a.ID, a, rev, func(cur *api.Account) error {
			if err := checkVersion(cur, a.Version); err != nil {
				return err
			}
			*cur = *before
			return nil
		})
	}
	if err != nil {
		log.Error().Str("account", a.ID).Str("error", err.Error()).Msg("account write naming a deleted secret could not be taken back")
	}
}

// checkVersion is CONFLICT (path version) unless a is at version want.
func checkVersion(a *api.Account, want int64) error {
	if a.Version != want {
		ce := api.Errorf(api.CodeConflict, "account %s is at version %d, not %d: read it again", a.ID, a.Version, want).
			WithPath("version")
		ce.Details.Version = a.Version
		return ce
	}
	return nil
}

// accountOffers answers accounts.offers {id, poolId?, query} with the
// offers the account's provider lists for the account's config
// (compute.internal.provider.<id>.offers); with poolId, the pool's
// placement goes with the query (OfferQuery.Placement), so availability
// is for where that pool's creates place. Errors: INVALID_INPUT (path id;
// query.<field>: OfferQuery.Check;
// poolId naming a pool of another account; query.placement given with
// poolId), NOT_FOUND (the account, or the pool), and the
// provider's errors (UNAVAILABLE when it does not answer).
func (s *service) accountOffers(ctx context.Context, req *bus.Request) (any, error) {
	var in api.AccountOffersRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := in.Query.Check(); err != nil {
		return nil, err
	}
	a, _, err := s.accounts.get(ctx, req.Tenant, "id", in.ID)
	if err != nil {
		return nil, err
	}
	if in.PoolID != "" {
		if in.Query.Placement != nil {
			return nil, api.InvalidInput("query.placement", "give poolId or query.placement, not both")
		}
		p, _, err := s.pools.get(ctx, req.Tenant, "poolId", in.PoolID)
		if err != nil {
			return nil, err
		}
		if p.ProviderAccountID != a.ID {
			return nil, api.InvalidInput("poolId", "pool %s is on account %s, not %s", p.ID, p.ProviderAccountID, a.ID)
		}
		in.Query.Placement = p.Placement
	}
	offers, err := s.offers(ctx, &a, in.Query)
	if err != nil {
		return nil, err
	}
	return api.List[api.Offer]{Items: offers}, nil
}

// offers asks a's provider for the offers of a matching q (never nil).
func (s *service) offers(ctx context.Context, a *api.Account, q api.OfferQuery) ([]api.Offer, error) {
	offers, err := provider.Remote{NC: s.nc, ID: a.Provider}.Offers(ctx, a.ProviderAccount(), q)
	if offers == nil {
		offers = []api.Offer{}
	}
	return offers, err
}

// validConfig validates config for provider providerID and tenant, in this
// order: the provider's manifest (describe, cached), no plain value where a
// secret reference belongs (provider.CheckPlainSecrets), the manifest
// (provider.ValidateConfig), every secret reference resolving for tenant
// (checkSecrets). It returns the config with defaults applied.
func (s *service) validConfig(ctx context.Context, tenant, providerID string, config map[string]any) (map[string]any, error) {
	manifest, err := s.manifests.get(ctx, providerID)
	if err != nil {
		return nil, err
	}
	if err := provider.CheckPlainSecrets("config", config); err != nil {
		return nil, err
	}
	out, err := provider.ValidateConfig(manifest, config)
	if err != nil {
		return nil, err
	}
	if err := s.checkSecrets(ctx, tenant, out); err != nil {
		return nil, err
	}
	return out, nil
}
