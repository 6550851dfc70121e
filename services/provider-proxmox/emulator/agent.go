package emulator

import (
	"fmt"
	"strconv"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// AgentInterface is one network interface as the guest agent reports it.
type AgentInterface struct {
	// Name is the interface name, e.g. "eth0".
	Name string `json:"name"`
	// MAC is its hardware address.
	MAC string `json:"hardware-address"`
	// Addresses are its IP addresses.
	Addresses []AgentAddress `json:"ip-addresses"`
}

// AgentAddress is one IP address of an AgentInterface.
type AgentAddress struct {
	// IP is the address, e.g. "10.0.0.5".
	IP string `json:"ip-address"`
	// Type is "ipv4" or "ipv6".
	Type string `json:"ip-address-type"`
	// Prefix is the prefix length.
	Prefix int `json:"prefix"`
}

// defaultAgentInterfaces is what the agent reports for v unless set with
// SetAgentInterfaces: lo, and eth0 with net0's MAC and ipconfig0's static
// address (or, for DHCP or none, 10.{vmid/65536%256}.{vmid/256%256}.
// {vmid%256}/16, a Guess at a plausible lease).
func defaultAgentInterfaces(v *vm) []AgentInterface {
	ip, prefix := fmt.Sprintf("10.%d.%d.%d", v.id>>16&255, v.id>>8&255, v.id&255), 16
	for _, opt := range strings.Split(v.config["ipconfig0"], ",") {
		if addr, ok := strings.CutPrefix(opt, "ip="); ok && addr != "dhcp" {
			a, p, _ := strings.Cut(addr, "/")
			ip, prefix = a, atoiOr(p, 32)
		}
	}
	return []AgentInterface{
		{Name: "lo", MAC: "00:00:00:00:00:00", Addresses: []AgentAddress{
			{IP: "127.0.0.1", Type: "ipv4", Prefix: 8}, {IP: "::1", Type: "ipv6", Prefix: 128}}},
		{Name: "eth0", MAC: strings.ToLower(netMAC(v.config["net0"])), Addresses: []AgentAddress{
			{IP: ip, Type: "ipv4", Prefix: prefix}}},
	}
}

// agentView renders interfaces as QEMU's guest-network-get-interfaces,
// statistics included.
func agentView(ifaces []AgentInterface) []any {
	out := make([]any, 0, len(ifaces))
	for _, i := range ifaces {
		addrs := make([]any, 0, len(i.Addresses))
		for _, a := range i.Addresses {
			addrs = append(addrs, map[string]any{"ip-address": a.IP, "ip-address-type": a.Type, "prefix": a.Prefix})
		}
		out = append(out, map[string]any{
			"name": i.Name, "hardware-address": i.MAC, "ip-addresses": addrs,
			"statistics": map[string]any{
				"rx-bytes": 0, "rx-dropped": 0, "rx-errs": 0, "rx-packets": 0,
				"tx-bytes": 0, "tx-dropped": 0, "tx-errs": 0, "tx-packets": 0,
			},
		})
	}
	return out
}

// getAgentInterfaces serves GET /nodes/{node}/qemu/{vmid}/agent/
// network-get-interfaces with PVE's checks in PVE's order: agent not
// configured, VM not running ("VM {id} is not running", which the Telmate
// client recognises), agent not running (SetAgentRunning false, or the
// VM started less than Options.AgentStartDelay ago). A VM with an SSH
// endpoint (Options.SSH) also gets the emulator-only api.EmulatorSSHPortKey
// beside "result".
func (e *Emulator) getAgentInterfaces(c *call) (any, *apiError) {
	v, err := e.vmOn(c)
	if err != nil {
		return nil, err
	}
	switch {
	case !v.agentConfigured():
		return nil, errInternal("No QEMU guest agent configured")
	case v.status != StatusRunning:
		return nil, errInternal("VM %d is not running", v.id)
	case !v.agentRunning || e.clock.Now().Before(v.startedAt.Add(e.opts.AgentStartDelay)):
		return nil, errInternal("QEMU guest agent is not running")
	}
	ifaces := v.agentIfaces
	if ifaces == nil {
		ifaces = defaultAgentInterfaces(v)
	}
	out := map[string]any{"result": agentView(ifaces)}
	if v.sshPort != 0 {
		// Emulator-only, as in the config (getConfig): a create that asks
		// the agent once its VM runs learns the endpoint without a config
		// read. Real PVE answers only "result".
		out[api.EmulatorSSHPortKey] = strconv.Itoa(v.sshPort)
	}
	return out, nil
}
