package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// bridgeResource is one interface of GET /nodes/{node}/network.
type bridgeResource struct {
	Iface string `json:"iface"`
}

// CheckPool answers whether the account can have a pool of req's network,
// placement and flavors (the provider's part of pools.create), checking
// first what needs no request and then, only when the pool names them,
// the cluster (GET /nodes; GET /nodes/{node}/network?type=any_bridge of
// each allowed online node for a bridge; GET /cluster/resources?type=
// storage for a flavor's storage):
//
//   - network: the Hetzner Cloud fields (privateNetworks, firewalls,
//     publicIPv4, publicIPv6) are refused (INVALID_INPUT naming the
//     field); bridge must be an interface name every allowed online node
//     has (network.bridge); vlan 1 to 4094, 0 untagged (network.vlan);
//     addresses a valid range (network.addresses.cidr, .gateway, .first,
//     .last, .dns[i]; see api.AddressRange.Parse);
//   - placement: spread and locations are Hetzner Cloud's
//     (placement.spread, placement.locations); every node one the cluster
//     has (placement.nodes[i]);
//   - flavors[i].storage: a storage id some allowed node has.
//
// Errors: INVALID_INPUT naming the pool field; the API's errors.
func (c *client) CheckPool(ctx context.Context, call *provider.Call, req api.ProviderPoolCheckRequest) (err error) {
	if err := checkPoolFields(req); err != nil {
		return err
	}
	bridge := ""
	if req.Network != nil {
		bridge = req.Network.Bridge
	}
	var allowed []string
	if req.Placement != nil {
		allowed = req.Placement.Nodes
	}
	storages := map[int]string{}
	for i, f := range req.Flavors {
		if f.Storage != "" {
			storages[i] = f.Storage
		}
	}
	if bridge == "" && len(allowed) == 0 && len(storages) == 0 {
		return nil
	}
	s, err := c.open(ctx, call, provider.VerbCheckPool)
	if err != nil {
		return err
	}
	defer s.end(ctx, &err)
	var nodes []nodeStatus
	if err := s.get(ctx, "/nodes", nil, &nodes); err != nil {
		return err
	}
	for i, name := range allowed {
		if !slices.ContainsFunc(nodes, func(n nodeStatus) bool { return n.Node == name }) {
			return api.InvalidInput(fmt.Sprintf("placement.nodes[%d]", i), "the cluster has no node %q", name)
		}
	}
	var online []string
	for _, n := range nodes {
		if n.Status == "online" && (len(allowed) == 0 || slices.Contains(allowed, n.Node)) {
			online = append(online, n.Node)
		}
	}
	if bridge != "" {
		if err := s.checkBridge(ctx, bridge, online); err != nil {
			return err
		}
	}
	return s.checkStorages(ctx, storages, online)
}

// checkPoolFields checks what needs no request (see CheckPool).
func checkPoolFields(req api.ProviderPoolCheckRequest) error {
	if nw := req.Network; nw != nil {
		switch {
		case len(nw.PrivateNetworks) > 0:
			return api.InvalidInput("network.privateNetworks", "private networks are Hetzner Cloud's: a Proxmox VE pool sets bridge and vlan")
		case len(nw.Firewalls) > 0:
			return api.InvalidInput("network.firewalls", "firewalls are Hetzner Cloud's: Proxmox VE pools have none")
		case nw.PublicIPv4 != nil:
			return api.InvalidInput("network.publicIPv4", "public IPs are Hetzner Cloud's: a Proxmox VE VM is on its bridge")
		case nw.PublicIPv6 != nil:
			return api.InvalidInput("network.publicIPv6", "public IPs are Hetzner Cloud's: a Proxmox VE VM is on its bridge")
		case nw.Bridge != "" && !bridgePattern.MatchString(nw.Bridge):
			return api.InvalidInput("network.bridge", "bridge must be an interface name such as %s", DefaultBridge)
		case nw.VLAN != 0 && (nw.VLAN < minVLAN || nw.VLAN > maxVLAN):
			return api.InvalidInput("network.vlan", "vlan must be %d to %d (0: untagged)", minVLAN, maxVLAN)
		}
		if nw.Addresses != nil {
			if _, err := nw.Addresses.Parse("network.addresses"); err != nil {
				return err
			}
		}
	}
	if pl := req.Placement; pl != nil {
		switch {
		case pl.Spread:
			return api.InvalidInput("placement.spread", "spread placement groups are Hetzner Cloud's: a Proxmox VE pool names nodes")
		case len(pl.Locations) > 0:
			return api.InvalidInput("placement.locations", "locations are Hetzner Cloud's: a Proxmox VE pool names nodes")
		}
		for i, n := range pl.Nodes {
			if !dnsNamePattern.MatchString(n) || slices.Index(pl.Nodes, n) != i {
				return api.InvalidInput(fmt.Sprintf("placement.nodes[%d]", i), "%q is not a node name, or is listed twice", n)
			}
		}
	}
	for i, f := range req.Flavors {
		if f.Storage != "" && !storagePattern.MatchString(f.Storage) {
			return api.InvalidInput(fmt.Sprintf("flavors[%d].storage", i), "storage must be a storage id such as %s", DefaultStorage)
		}
	}
	return nil
}

// checkBridge refuses (INVALID_INPUT network.bridge) a bridge one of the
// nodes lacks: a VM there would not start.
func (s *session) checkBridge(ctx context.Context, bridge string, nodes []string) error {
	for _, node := range nodes {
		var ifaces []bridgeResource
		if err := s.get(ctx, "/nodes/"+url.PathEscape(node)+"/network", url.Values{"type": {"any_bridge"}}, &ifaces); err != nil {
			return err
		}
		if !slices.ContainsFunc(ifaces, func(b bridgeResource) bool { return b.Iface == bridge }) {
			return api.InvalidInput("network.bridge", "node %s has no bridge %q", node, bridge)
		}
	}
	return nil
}

// checkStorages refuses (INVALID_INPUT flavors[i].storage) a flavor's
// storage that none of the nodes has.
func (s *session) checkStorages(ctx context.Context, storages map[int]string, nodes []string) error {
	if len(storages) == 0 {
		return nil
	}
	var list []storageResource
	if err := s.get(ctx, "/cluster/resources", url.Values{"type": {"storage"}}, &list); err != nil {
		return err
	}
	idx := make([]int, 0, len(storages))
	for i := range storages {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		if !slices.ContainsFunc(list, func(r storageResource) bool {
			return r.Storage == storages[i] && slices.Contains(nodes, r.Node)
		}) {
			return api.InvalidInput(fmt.Sprintf("flavors[%d].storage", i), "no allowed node has storage %q", storages[i])
		}
	}
	return nil
}
