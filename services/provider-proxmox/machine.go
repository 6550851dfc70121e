package proxmox

import (
	"strconv"

	"better-compute.io/compute/pkg/api"
)

// notAMachine is the machineStates value of facts that make a VM no
// machine at all.
const notAMachine = ""

// machineStates is the one mapping from what PVE reports about a VM to a
// machine state. Keys are facts: "template" (the VM is a template),
// "lock=<config lock>" and "status=<status of status/current or
// /cluster/resources>". A VM's facts are looked up in that order and the
// first present key decides; a VM matching none is unknown.
//
// Templates are never machines. A clone or create in progress is pending,
// and so is a rollback (the disk is being replaced; it comes back as it
// was). suspending is still running; suspended (hibernated to disk) is
// stopped until started. Locks that leave the VM as it is (backup,
// migrate — a live migration keeps it up —, snapshot, snapshot-delete)
// are not listed: the status decides. status unknown is a VM on a node
// that is offline.
var machineStates = map[string]api.MachineState{
	"template":        notAMachine,
	"lock=clone":      api.StatePending,
	"lock=create":     api.StatePending,
	"lock=rollback":   api.StatePending,
	"lock=suspending": api.StateRunning,
	"lock=suspended":  api.StateStopped,
	"status=running":  api.StateRunning,
	"status=stopped":  api.StateStopped,
	"status=unknown":  api.StateUnknown,
}

// machineState looks a VM's facts up in machineStates; machine is false
// for a VM that is not a machine (a template).
func machineState(template bool, lock, status string) (state api.MachineState, machine bool) {
	facts := []string{"lock=" + lock, "status=" + status}
	if template {
		facts = append([]string{"template"}, facts...)
	}
	for _, f := range facts {
		if s, ok := machineStates[f]; ok {
			return s, s != notAMachine
		}
	}
	return api.StateUnknown, true
}

// statusRunning is PVE's status of a running VM.
const statusRunning = "running"

// toMachine renders a VM of this system: id (the VMID), idempotency key,
// name, state, offer (both from its description), region (the
// account's) and labels (from its tags, TagLabels). Addresses are filled by the caller.
func (c *client) toMachine(vmid int, cfg vmConfig, state api.MachineState) *api.ExternalMachine {
	key, _ := cfg.key()
	return &api.ExternalMachine{
		ID:             strconv.Itoa(vmid),
		IdempotencyKey: key,
		Name:           cfg["name"],
		State:          state,
		OfferID:        cfg.offer(),
		Region:         c.cfg.region(),
		Addresses:      []string{},
		SSHEndpoint:    api.EmulatorSSHEndpoint(cfg[api.EmulatorSSHPortKey]), // emulator-only
		Labels:         TagLabels(cfg["tags"]),
	}
}

// parseVMID reads a machine id as a VMID. Errors: INVALID_INPUT naming "id".
func parseVMID(id string) (int, error) {
	n, err := strconv.Atoi(id)
	if err != nil || n < minVMID || n > maxVMID || strconv.Itoa(n) != id {
		return 0, api.InvalidInput("id", "id must be a Proxmox VMID (an integer from %d to %d)", minVMID, maxVMID)
	}
	return n, nil
}
