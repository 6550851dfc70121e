package proxmox

import (
	"context"
	"slices"

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
// price. An offer is available when a node a create may place on has at
// least its vCPUs and its memory free, online (GET /nodes, one request;
// none when no size matches q): with q.Placement, one of its nodes, as a
// create of that pool would place (allowedNodes, holds; the same rule as
// place, short of asking whether the template's disks can reach the node,
// which depends on the flavor's image); else the pinned node, when the
// account pins one; else any node.
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
	var poolNodes []string
	if q.Placement != nil {
		poolNodes = q.Placement.Nodes
	}
	allowed := c.allowedNodes(poolNodes)
	for i, o := range offers {
		offers[i].Available = slices.ContainsFunc(nodes, func(n nodeStatus) bool {
			return (len(allowed) == 0 || slices.Contains(allowed, n.Node)) && holds(n, o.Vcpu, int(o.MemoryGiB*1024))
		})
	}
	return offers, nil
}
