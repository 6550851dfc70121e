package accounts

import (
	"context"
	"fmt"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// checkPoolPlacement is pools.create's check of the pool's network,
// placement and flavor storages, before anything is written:
//
//  1. an address range (network.addresses) must parse
//     (api.AddressRange.Parse: INVALID_INPUT naming
//     network.addresses.cidr, .gateway, .first, .last or .dns[i]) and
//     must not overlap the range of another pool of the account
//     (INVALID_INPUT network.addresses.cidr naming that pool): two pools
//     handing out one address would give it to two machines on one
//     network. Like the name check, this is a read, not a lock;
//  2. the account's provider is asked (checkpool,
//     api.ProviderPoolCheckRequest) whether the account can have them:
//     its INVALID_INPUT names the field (network.bridge,
//     placement.nodes[1], flavors[0].storage, …). Only asked when the
//     pool declares a network, a placement or a flavor storage, so pools
//     without them cost no call.
//
// Errors: INVALID_INPUT naming the field, the provider's errors
// (UNAVAILABLE when it does not answer), UNAVAILABLE.
func (s *service) checkPoolPlacement(ctx context.Context, a *api.Account, in *api.PoolCreateRequest) error {
	if in.Network != nil && in.Network.Addresses != nil {
		if err := s.checkRangeFree(ctx, a, in.Network.Addresses); err != nil {
			return err
		}
	}
	if in.Network == nil && in.Placement == nil && !hasStorage(in.Flavors) {
		return nil
	}
	return provider.Remote{NC: s.nc, ID: a.Provider}.CheckPool(ctx, api.ProviderPoolCheckRequest{
		Account: a.ProviderAccount(), Network: in.Network, Placement: in.Placement, Flavors: in.Flavors})
}

// checkRangeFree parses rng and refuses it when it overlaps the range of
// another pool of account a (see checkPoolPlacement).
func (s *service) checkRangeFree(ctx context.Context, a *api.Account, rng *api.AddressRange) error {
	const path = "network.addresses"
	span, err := rng.Parse(path)
	if err != nil {
		return err
	}
	page, err := s.pools.Reader().List(ctx, a.TenantID, 1, "", func(p *api.Pool) bool {
		if p.ProviderAccountID != a.ID || p.Network == nil || p.Network.Addresses == nil {
			return false
		}
		other, err := p.Network.Addresses.Parse(path)
		return err == nil && other.Overlaps(span)
	})
	if err != nil {
		return err
	}
	if len(page.Items) > 0 {
		p := page.Items[0]
		return api.InvalidInput(path+".cidr", "%s overlaps the addresses of pool %s (%s) on account %s",
			describeRange(rng), p.ID, describeRange(p.Network.Addresses), a.ID)
	}
	return nil
}

// describeRange is "10.0.0.0/24" or "10.0.0.0/24 from 10.0.0.10 to 10.0.0.50".
func describeRange(r *api.AddressRange) string {
	if r.First == "" && r.Last == "" {
		return r.CIDR
	}
	return fmt.Sprintf("%s from %s to %s", r.CIDR, r.First, r.Last)
}

// hasStorage reports whether a flavor names a storage.
func hasStorage(flavors []api.Flavor) bool {
	for _, f := range flavors {
		if f.Storage != "" {
			return true
		}
	}
	return false
}
