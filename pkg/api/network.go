package api

// Network and placement of a pool's machines, declared on the pool and
// handed to the provider in every create (MachineSpec.Network,
// MachineSpec.Placement). Each part is a provider capability that
// describe declares; a pool that asks for a part its provider lacks is
// refused at pools.create with INVALID_INPUT naming the field.

// PoolNetwork is how a pool's machines are connected. The Hetzner Cloud
// fields and the Proxmox VE fields are disjoint: a pool sets those of its
// account's provider.
type PoolNetwork struct {
	// PrivateNetworks are Hetzner Cloud networks every server is attached
	// to at create (POST /servers "networks"), each by id or name; one
	// with an IPRange right after (attach_to_network with ip_range).
	PrivateNetworks []NetworkAttachment `json:"privateNetworks,omitempty"`
	// Firewalls are Hetzner Cloud firewalls (id or name) applied to every
	// server at create (POST /servers "firewalls").
	Firewalls []string `json:"firewalls,omitempty"`
	// PublicIPv4 and PublicIPv6 turn the server's public addresses on or
	// off (POST /servers "public_net"); nil means on. A server with
	// neither needs a private network.
	PublicIPv4 *bool `json:"publicIPv4,omitempty"`
	PublicIPv6 *bool `json:"publicIPv6,omitempty"`
	// Bridge is the Proxmox VE bridge of net0 (default: the account's).
	Bridge string `json:"bridge,omitempty"`
	// VLAN is the 802.1Q tag of net0 on Proxmox VE (1–4094; 0: untagged).
	VLAN int `json:"vlan,omitempty"`
	// Addresses, on Proxmox VE, gives every VM a static IPv4 address from
	// a range instead of DHCP (cloud-init ipconfig0).
	Addresses *AddressRange `json:"addresses,omitempty"`
}

// NetworkAttachment names a private network (id or name) and, optionally,
// the IP range within it the server's address comes from (CIDR, e.g.
// "10.0.1.0/24", one of the network's subnets).
type NetworkAttachment struct {
	Network string `json:"network"`
	IPRange string `json:"ipRange,omitempty"`
}

// AddressRange is a pool's static IPv4 range: addresses are handed out
// from CIDR (between First and Last when set, both inclusive), never the
// network, broadcast or gateway address, each to one machine at a time.
type AddressRange struct {
	// CIDR is the subnet, e.g. "192.168.10.0/24"; the prefix length is the
	// machine's.
	CIDR string `json:"cidr"`
	// Gateway is the default gateway, inside CIDR.
	Gateway string `json:"gateway"`
	// DNS are the name servers written to cloud-init (at most 3).
	DNS []string `json:"dns,omitempty"`
	// First and Last bound the addresses handed out (inside CIDR).
	First string `json:"first,omitempty"`
	Last  string `json:"last,omitempty"`
}

// PoolPlacement is where a pool's machines run.
type PoolPlacement struct {
	// Spread puts the pool's servers in spread placement groups created
	// and deleted by the control plane (Hetzner Cloud: at most 10 servers
	// a group, so groups are chunked).
	Spread bool `json:"spread,omitempty"`
	// Locations is an ordered list of Hetzner Cloud locations: when one
	// has no capacity (412 resource_unavailable) the next is tried.
	Locations []string `json:"locations,omitempty"`
	// Nodes are the Proxmox VE nodes a clone may be placed on (default:
	// every online node); the one with the most headroom that can hold
	// the flavor is chosen.
	Nodes []string `json:"nodes,omitempty"`
}

// StaticAddress is the address allocated to one machine from its pool's
// AddressRange: Address in CIDR notation ("192.168.10.17/24"), Gateway
// and DNS as in the range.
type StaticAddress struct {
	Address string   `json:"address"`
	Gateway string   `json:"gateway"`
	DNS     []string `json:"dns,omitempty"`
}
