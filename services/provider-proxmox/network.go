package proxmox

import (
	"net/netip"
	"strconv"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// ipDHCP is ipconfig0 for DHCP.
const ipDHCP = "ip=dhcp"

// Bounds of a VLAN tag (PVE's net tag= option).
const (
	minVLAN = 1
	maxVLAN = 4094
)

// netSpec is how a VM's first NIC and cloud-init network must be set:
// net0's bridge and VLAN tag (0: untagged), ipconfig0 and nameserver
// ("" leaves the VM's).
type netSpec struct {
	bridge     string
	vlan       int
	ipconfig0  string
	nameserver string
	// pool is set when the bridge or VLAN tag is the pool's
	// (machine.network) or, for a reinstall, the old VM's other than the
	// account's bridge untagged: a clone must then have net0 checked
	// against the template's config as it is (see cacheable).
	pool bool
}

// cacheable reports whether a clone of a template whose config is cfg, a
// cached one (templateCache), may be configured to n without reading the
// template's config: a create from a cached config never writes net0,
// since net0 is one string that also holds what this system does not
// manage (model, MAC, firewall, mtu, rate, queues), which an edit of the
// template may have changed since (and the clone copied). So n must leave
// net0 as cfg has it: not the pool's (n.pool), and cfg's net0 on n's
// bridge with n's VLAN tag (none) already.
func (n netSpec) cacheable(cfg vmConfig) bool {
	return !n.pool && withNet(cfg["net0"], n.bridge, n.vlan) == cfg["net0"]
}

// machineNet is spec's network on an account whose default bridge is
// bridge: network.bridge (else bridge), network.vlan, and ipconfig0
// "ip=<address>,gw=<gateway>" with nameserver "<dns> <dns>" for a static
// address (machine.address), else "ip=dhcp". Errors: INVALID_INPUT naming
// machine.network.bridge, machine.network.vlan, machine.address.address
// (not an IPv4 address in CIDR notation) or machine.address.gateway (not
// an IPv4 address inside it), machine.address.dns[i].
func machineNet(spec api.MachineSpec, bridge string) (netSpec, error) {
	n := netSpec{bridge: bridge, ipconfig0: ipDHCP}
	if nw := spec.Network; nw != nil {
		if nw.Bridge != "" {
			if !bridgePattern.MatchString(nw.Bridge) {
				return n, api.InvalidInput("machine.network.bridge", "bridge must be an interface name such as %s", DefaultBridge)
			}
			n.bridge = nw.Bridge
		}
		n.pool = nw.Bridge != "" || nw.VLAN != 0
		if nw.VLAN != 0 && (nw.VLAN < minVLAN || nw.VLAN > maxVLAN) {
			return n, api.InvalidInput("machine.network.vlan", "vlan must be %d to %d (0: untagged)", minVLAN, maxVLAN)
		}
		n.vlan = nw.VLAN
	}
	a := spec.Address
	if a == nil {
		return n, nil
	}
	p, err := netip.ParsePrefix(a.Address)
	if err != nil || !p.Addr().Is4() {
		return n, api.InvalidInput("machine.address.address", "address must be an IPv4 address in CIDR notation, e.g. 192.168.10.17/24")
	}
	gw, err := netip.ParseAddr(a.Gateway)
	if err != nil || !gw.Is4() || !p.Masked().Contains(gw) {
		return n, api.InvalidInput("machine.address.gateway", "gateway must be an IPv4 address inside %s", p.Masked())
	}
	for i, d := range a.DNS {
		if _, err := netip.ParseAddr(d); err != nil {
			return n, api.InvalidInput("machine.address.dns["+strconv.Itoa(i)+"]", "%q is not an IP address", d)
		}
	}
	n.ipconfig0 = "ip=" + p.String() + ",gw=" + gw.String()
	n.nameserver = strings.Join(a.DNS, " ")
	return n, nil
}

// keptNet is the netSpec of an existing VM's config (a reinstall keeps
// it): net0's bridge (else bridge) and tag, ipconfig0 (else DHCP) and
// nameserver; pool when net0 is not on bridge untagged.
func keptNet(cfg vmConfig, bridge string) netSpec {
	n := netSpec{bridge: bridge, ipconfig0: cfg["ipconfig0"], nameserver: cfg["nameserver"]}
	if b, ok := netOption(cfg["net0"], "bridge"); ok {
		n.bridge = b
	}
	if t, ok := netOption(cfg["net0"], "tag"); ok {
		n.vlan = atoiOr(t, 0)
	}
	if n.ipconfig0 == "" {
		n.ipconfig0 = ipDHCP
	}
	n.pool = n.bridge != bridge || n.vlan != 0
	return n
}

// withNet is a net value attached to bridge with VLAN tag vlan (0: no
// tag option), keeping its model, MAC and other options (see withBridge).
func withNet(net, bridge string, vlan int) string {
	parts := strings.Split(withBridge(net, bridge), ",")
	out := parts[:1]
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "tag=") {
			out = append(out, p)
		}
	}
	if vlan != 0 {
		out = append(out, "tag="+strconv.Itoa(vlan))
	}
	return strings.Join(out, ",")
}

// netOption is option name of a net value ("virtio=…,bridge=vmbr0,tag=10").
func netOption(net, name string) (string, bool) {
	parts := strings.Split(net, ",")
	for _, p := range parts[1:] {
		if v, ok := strings.CutPrefix(p, name+"="); ok {
			return v, true
		}
	}
	return "", false
}
