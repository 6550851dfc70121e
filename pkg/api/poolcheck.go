package api

// ProviderPoolCheckRequest asks a provider whether the account can have a
// pool's network, placement and flavors
// (compute.internal.provider.<providerId>.checkpool), before pools.create
// stores the pool. The reply is Empty; a refusal is INVALID_INPUT whose
// details.path names the pool request's field (e.g.
// "network.privateNetworks[0].network", "placement.locations[1]").
type ProviderPoolCheckRequest struct {
	Account   ProviderAccount `json:"account"`
	Network   *PoolNetwork    `json:"network,omitempty"`
	Placement *PoolPlacement  `json:"placement,omitempty"`
	Flavors   []Flavor        `json:"flavors,omitempty"`
}
