package emulator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RouteNetworkList is GET /nodes/{node}/network (the node's interfaces).
const RouteNetworkList = "GET /nodes/{node}/network"

// getNetworkList serves GET /nodes/{node}/network[?type=bridge|any_bridge]:
// the node's bridges (the emulator models no other interfaces; Guess: a
// subset of the fields PVE reports for a bridge).
func (e *Emulator) getNetworkList(c *call) (any, *apiError) {
	switch t := c.p["type"]; t {
	case "", "bridge", "any_bridge":
	default:
		if !slices.Contains([]string{"bond", "eth", "alias", "vlan", "OVSBridge", "OVSBond", "OVSPort", "OVSIntPort", "vnet"}, t) {
			return nil, errParam("type", fmt.Sprintf("value '%s' does not have a value in the enumeration", t))
		}
		return []any{}, nil
	}
	out := make([]any, 0, len(c.node.Bridges))
	for _, b := range c.node.Bridges {
		out = append(out, map[string]any{
			"iface": b, "type": "bridge", "active": 1, "autostart": 1, "method": "manual", "method6": "manual",
			"bridge_ports": "", "bridge_stp": "off", "bridge_fd": "0", "bridge_vlan_aware": 1, "families": []string{"inet"},
		})
	}
	return out, nil
}

// netOption is the value of option name in a net device value
// ("virtio=…,bridge=vmbr0,tag=10"), and whether it is there.
func netOption(net, name string) (string, bool) {
	for _, p := range strings.Split(net, ",")[1:] {
		if v, ok := strings.CutPrefix(p, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// checkNet is PVE's schema check of a net device value's tag (an integer
// 1 to 4094): an error message for the 400 errors map, "" when valid.
func checkNet(val string) string {
	tag, ok := netOption(val, "tag")
	if !ok {
		return ""
	}
	if n, err := strconv.Atoi(tag); err != nil || n < 1 || n > 4094 {
		// Guess: the wording of PVE's property-string error for tag.
		return fmt.Sprintf("invalid format - format error\ntag: value must be an integer between 1 and 4094 - got '%s'", tag)
	}
	return ""
}

// missingBridge is the bridge of v's net devices that node lacks ("" when
// it has them all): qmstart fails with PVE's "bridge '…' does not exist".
func missingBridge(v *vm, node *Node) string {
	for k, val := range v.config {
		if !netKeyPattern.MatchString(k) {
			continue
		}
		if b, ok := netOption(val, "bridge"); ok && !slices.Contains(node.Bridges, b) {
			return b
		}
	}
	return ""
}
