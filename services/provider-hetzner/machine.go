package hetzner

import (
	"net"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
)

// serverStates maps every Hetzner server status to a machine state; a
// status not listed here is "unknown".
//
// stopping is "running": the machine is still up and serving until it
// reaches off, and a stop the provider waits for ends in off anyway.
// rebuilding is "pending": the disk is being replaced and the machine
// comes back running. migrating is "running": a live migration keeps the
// machine up.
var serverStates = map[hcloud.ServerStatus]api.MachineState{
	hcloud.ServerStatusInitializing: api.StatePending,
	hcloud.ServerStatusStarting:     api.StatePending,
	hcloud.ServerStatusRunning:      api.StateRunning,
	hcloud.ServerStatusStopping:     api.StateRunning,
	hcloud.ServerStatusOff:          api.StateStopped,
	hcloud.ServerStatusDeleting:     api.StateDeleting,
	hcloud.ServerStatusRebuilding:   api.StatePending,
	hcloud.ServerStatusMigrating:    api.StateRunning,
	hcloud.ServerStatusUnknown:      api.StateUnknown,
}

// machineState is the machine state of a server status.
func machineState(status hcloud.ServerStatus) api.MachineState {
	if s, ok := serverStates[status]; ok {
		return s
	}
	return api.StateUnknown
}

// toMachine renders a server as an ExternalMachine: id, idempotency key
// (labels.reportedKey of the key the call expects, "" for none), name,
// state, offer (server type), region (location) and addresses (public IPv4,
// then the first address of the public IPv6 /64, "::1", which Hetzner
// configures, then the private network addresses; a family the server
// has not is left out) and user labels (labels.user).
func (c *client) toMachine(srv *hcloud.Server, key string) *api.ExternalMachine {
	m := &api.ExternalMachine{
		ID:             strconv.FormatInt(srv.ID, 10),
		IdempotencyKey: c.labels.reportedKey(srv.Labels, key),
		Name:           srv.Name,
		State:          machineState(srv.Status),
		Addresses:      []string{},
	}
	if srv.ServerType != nil {
		m.OfferID = srv.ServerType.Name
	}
	if srv.Location != nil {
		m.Region = srv.Location.Name
	}
	if v4 := srv.PublicNet.IPv4; !v4.IsUnspecified() {
		m.Addresses = append(m.Addresses, v4.IP.String())
	}
	if v6 := srv.PublicNet.IPv6; !v6.IsUnspecified() {
		m.Addresses = append(m.Addresses, firstHost(v6.IP).String())
	}
	for _, p := range srv.PrivateNet {
		if p.IP != nil {
			m.Addresses = append(m.Addresses, p.IP.String())
		}
	}
	m.SSHEndpoint = api.EmulatorSSHEndpoint(srv.Labels[api.EmulatorSSHPortKey]) // emulator-only
	m.Labels = c.labels.user(srv.Labels)
	return m
}

// firstHost is the network address ip plus one.
func firstHost(ip net.IP) net.IP {
	out := make(net.IP, len(ip))
	copy(out, ip)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			break
		}
	}
	return out
}

// parseServerID reads a machine id as a Hetzner server id (a positive
// integer). Errors: INVALID_INPUT naming "id".
func parseServerID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, api.InvalidInput("id", "id must be a Hetzner server id (a positive integer)")
	}
	return n, nil
}
