package proxmox

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// nodeStatus is one node of GET /nodes.
type nodeStatus struct {
	Node   string `json:"node"`
	Status string `json:"status"`
	MaxCPU number `json:"maxcpu"`
	Mem    number `json:"mem"`
	MaxMem number `json:"maxmem"`
}

// ListOffers returns the account's sizes that match q, as offers of kind
// vps in the account's region (the pinned node, else "proxmox"), without a
// price. An offer is available when an online node (the pinned node, when
// the account pins one) has at least its vCPUs and its memory free
// (GET /nodes, one request; none when no size matches q).
//
// Errors: PROVIDER_ERROR, UNAVAILABLE.
func (c *client) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) (offers []api.Offer, err error) {
	offers = []api.Offer{}
	for _, sz := range c.cfg.Sizes {
		o := api.Offer{ID: sz.Name, Kind: api.KindVPS, Region: c.cfg.region(), Vcpu: sz.Vcpu,
			MemoryGiB: float64(sz.MemoryGiB), DiskGiB: float64(sz.DiskGiB),
			CapacityType: api.CapacityOnDemand} // a cluster's own VMs are never reclaimed
		if q.Matches(o) {
			offers = append(offers, o)
		}
	}
	if len(offers) == 0 {
		return offers, nil
	}
	s, err := c.open(ctx, call, provider.VerbOffers)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	var nodes []nodeStatus
	if err := s.get(ctx, "/nodes", nil, &nodes); err != nil {
		return nil, err
	}
	for i := range offers {
		offers[i].Available = fits(nodes, offers[i], c.cfg.Node)
	}
	return offers, nil
}

// fits reports whether an online node (only pinned, when set) has o's
// vCPUs and o's memory free.
func fits(nodes []nodeStatus, o api.Offer, pinned string) bool {
	for _, n := range nodes {
		if n.Status != "online" || (pinned != "" && n.Node != pinned) {
			continue
		}
		if int(n.MaxCPU) >= o.Vcpu && float64(n.MaxMem-n.Mem) >= o.MemoryGiB*(1<<30) {
			return true
		}
	}
	return false
}
