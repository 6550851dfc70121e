package accounts

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// checkPool asks the account's provider (checkpool) whether the account
// can have the pool's network, placement and flavors' storage, when the
// pool sets any of them: a pool without them needs nothing the account
// could lack beyond its offers (checkOffers). Errors: the provider's
// INVALID_INPUT naming the pool request's field (e.g.
// "network.privateNetworks[0].network"), UNAVAILABLE, the account's API
// errors.
func (s *service) checkPool(ctx context.Context, a *api.Account, in *api.PoolCreateRequest) error {
	if in.Network == nil && in.Placement == nil && !anyStorage(in.Flavors) {
		return nil
	}
	return provider.Remote{NC: s.nc, ID: a.Provider}.CheckPool(ctx, api.ProviderPoolCheckRequest{
		Account: a.ProviderAccount(), Network: in.Network, Placement: in.Placement, Flavors: in.Flavors})
}

// anyStorage reports whether a flavor names a storage.
func anyStorage(flavors []api.Flavor) bool {
	for _, f := range flavors {
		if f.Storage != "" {
			return true
		}
	}
	return false
}
