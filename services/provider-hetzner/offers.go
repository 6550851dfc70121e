package hetzner

import (
	"context"
	"math"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// currencyEUR is the currency of every Hetzner price.
const currencyEUR = "EUR"

// ListOffers returns the server types offered in the query's region (or
// the account's location) that match q: GET /server_types, every page
// (GET /datacenters is gone and never called). With q.Placement's
// locations and no region, each type is offered where a create of that
// pool would land: the first of the locations where it is available
// (available), else the first where it is listed (not available). A
// query for GPUs or for a kind other than vps answers no offer without
// calling the API. Offers come cheapest first (api.SortOffersByPrice)
// and carry their architecture: amd64 for x86 types, arm64 for Arm (the
// cax types).
//
// Errors: RATE_LIMITED, PROVIDER_ERROR, UNAVAILABLE.
func (c *client) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) (offers []api.Offer, err error) {
	if q.GPUs > 0 || (q.Kind != "" && q.Kind != api.KindVPS) {
		return []api.Offer{}, nil
	}
	regions := []string{q.Region}
	switch {
	case q.Region != "":
	case q.Placement != nil && len(q.Placement.Locations) > 0:
		regions = q.Placement.Locations
	default:
		regions = []string{c.location}
	}
	s, err := c.open(ctx, call, provider.VerbOffers)
	if err != nil {
		return nil, err
	}
	defer func() { err = s.done(ctx, err) }()
	types, err := s.api.ServerType.All(ctx)
	if err != nil {
		return nil, err
	}
	offers = []api.Offer{}
	for _, t := range types {
		if o, ok := offerInFirst(t, regions); ok && q.Matches(o) {
			offers = append(offers, o)
		}
	}
	api.SortOffersByPrice(offers)
	return offers, nil
}

// offerInFirst is server type t as an offer in the first of regions where
// it is available, else in the first where it is offered at all (see
// offerIn).
func offerInFirst(t *hcloud.ServerType, regions []string) (api.Offer, bool) {
	var first api.Offer
	found := false
	for _, r := range regions {
		o, ok := offerIn(t, r)
		switch {
		case ok && o.Available:
			return o, true
		case ok && !found:
			first, found = o, true
		}
	}
	return first, found
}

// offerIn is server type t as an offer in region: only when t is listed in
// that location and deprecated neither everywhere nor there. Available is
// the location's available flag; the price is the gross hourly price of
// that location (omitted when the API lists none or it does not parse).
func offerIn(t *hcloud.ServerType, region string) (api.Offer, bool) {
	if t.IsDeprecated() {
		return api.Offer{}, false
	}
	for _, tl := range t.Locations {
		if tl.Location == nil || tl.Location.Name != region {
			continue
		}
		if tl.IsDeprecated() {
			return api.Offer{}, false
		}
		return api.Offer{
			ID:           t.Name,
			Kind:         api.KindVPS,
			Region:       region,
			Vcpu:         t.Cores,
			MemoryGiB:    math.Round(float64(t.Memory)*1000) / 1000,
			DiskGiB:      float64(t.Disk),
			PricePerHour: hourlyPrice(t, region),
			Architecture: architecture(t.Architecture),
			Currency:     currencyEUR,
			Available:    tl.Available,
			// Hetzner Cloud sells no spot capacity.
			CapacityType: api.CapacityOnDemand,
		}, true
	}
	return api.Offer{}, false
}

// hourlyPrice is t's gross hourly price in region (nil when unknown).
func hourlyPrice(t *hcloud.ServerType, region string) *float64 {
	for _, p := range t.Pricings {
		if p.Location == nil || p.Location.Name != region {
			continue
		}
		if v, err := strconv.ParseFloat(p.Hourly.Gross, 64); err == nil {
			return &v
		}
	}
	return nil
}

// architecture is Hetzner's server type architecture in api's naming
// (x86 → amd64, arm → arm64; "" for one this build does not know).
func architecture(a hcloud.Architecture) string {
	switch a {
	case hcloud.ArchitectureX86:
		return api.ArchAMD64
	case hcloud.ArchitectureARM:
		return api.ArchARM64
	}
	return ""
}
