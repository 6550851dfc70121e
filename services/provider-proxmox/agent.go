package proxmox

import (
	"context"
	"errors"
	"net/netip"
	"regexp"

	"better-compute.io/compute/pkg/api"
)

// agentInterfaces is the reply of GET …/agent/network-get-interfaces.
type agentInterfaces struct {
	Result []struct {
		Addresses []struct {
			IP string `json:"ip-address"`
		} `json:"ip-addresses"`
	} `json:"result"`
	// SSHPort is the emulator's SSH port of the VM (emulator-only, see
	// api.EmulatorSSHPortKey; real PVE has no such field).
	SSHPort string `json:"emulator-ssh-port"`
}

// addresses asks vm's QEMU guest agent for its addresses: IPv4 first, then
// IPv6, each once, without loopback, link-local, multicast or unspecified
// ones. An agent that is not configured, not running or not answering
// (PVE: 500 "QEMU guest agent is not running" while the guest boots), or
// one that reports no such address yet (Guess: the agent may start before
// the guest's DHCP lease), gives no addresses and pending, not an error.
func (s *session) addresses(ctx context.Context, vm *located) (addrs []string, pending bool, err error) {
	addrs, pending, _, err = s.askAgent(ctx, vm)
	if isKind(err, kindNoAgent) {
		return []string{}, true, nil
	}
	return addrs, pending, err
}

// noAgentConfigured is how PVE says that a VM has no guest agent
// (agent not enabled in its config).
var noAgentConfigured = regexp.MustCompile(`^No QEMU guest agent configured`)

// agentNotConfigured reports whether err says the VM has no guest agent
// configured (a kindNoAgent failure that waiting does not end).
func agentNotConfigured(err error) bool {
	var pe *pveError
	return errors.As(err, &pe) && pe.kind == kindNoAgent && noAgentConfigured.MatchString(pe.message)
}

// askAgent is addresses with a kindNoAgent failure returned as the
// error, and with the emulator's SSH endpoint of the VM when the agent's
// reply carries one (emulator-only: "" on real PVE).
func (s *session) askAgent(ctx context.Context, vm *located) (addrs []string, pending bool, sshEndpoint string, err error) {
	var reply agentInterfaces
	err = s.get(ctx, qemuPath(vm.node, vm.vmid)+"/agent/network-get-interfaces", nil, &reply)
	if err != nil {
		return nil, false, "", err
	}
	var v4, v6 []string
	seen := map[netip.Addr]bool{}
	for _, iface := range reply.Result {
		for _, a := range iface.Addresses {
			ip, err := netip.ParseAddr(a.IP)
			if err != nil {
				continue
			}
			ip = ip.WithZone("").Unmap()
			if seen[ip] || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
				continue
			}
			seen[ip] = true
			if ip.Is4() {
				v4 = append(v4, ip.String())
			} else {
				v6 = append(v6, ip.String())
			}
		}
	}
	addrs = append(append([]string{}, v4...), v6...)
	return addrs, len(addrs) == 0, api.EmulatorSSHEndpoint(reply.SSHPort), nil
}
