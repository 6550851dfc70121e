package api

// ProviderPoolCheckRequest asks a provider (verb checkpool) whether the
// account can have a pool of this network, placement and flavors: the
// account's side of pools.create's validation. The reply is Empty, or an
// INVALID_INPUT whose details.path names the pool field refused (e.g.
// "network.bridge", "placement.nodes[1]", "flavors[0].storage"). Checks
// that need other pools (an address range overlapping another pool's) are
// the caller's.
type ProviderPoolCheckRequest struct {
	Account   ProviderAccount `json:"account"`
	Network   *PoolNetwork    `json:"network,omitempty"`
	Placement *PoolPlacement  `json:"placement,omitempty"`
	Flavors   []Flavor        `json:"flavors,omitempty"`
}
