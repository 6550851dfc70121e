package emulator

import (
	"maps"
	"strings"
)

// VMSnapshot is a copy of one VM's state.
type VMSnapshot struct {
	// VMID is the VM's ID.
	VMID int `json:"vmid"`
	// Node is the node holding it.
	Node string `json:"node"`
	// Name is the config's name ("" when unset, e.g. while cloning).
	Name string `json:"name"`
	// Status is StatusRunning or StatusStopped.
	Status string `json:"status"`
	// Template is true for templates.
	Template bool `json:"template"`
	// Tags are the normalised tags.
	Tags []string `json:"tags"`
	// Description is the config's description.
	Description string `json:"description"`
	// Cores is the config's cores.
	Cores int `json:"cores"`
	// MemoryMiB is the config's memory.
	MemoryMiB int `json:"memory_mib"`
	// DiskGiB is the boot disk's size, rounded up.
	DiskGiB int `json:"disk_gib"`
	// Lock is the config's lock ("clone", …) or "".
	Lock string `json:"lock"`
	// Pool is the pool the VM was cloned into, or "".
	Pool string `json:"pool"`
	// ClonedFrom is the VMID of the VM it was cloned from (0 when it was
	// not cloned), which PVE does not record: what a test reads to tell
	// which template a VM's disk came from.
	ClonedFrom int `json:"cloned_from"`
	// AgentRunning is whether the guest agent would answer once running.
	AgentRunning bool `json:"agent_running"`
	// Config is the raw config, all values strings.
	Config map[string]string `json:"config"`
}

// VMs returns every VM (templates included) in VMID order, after
// completing due tasks.
func (e *Emulator) VMs() []VMSnapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advanceLocked()
	ids := e.sortedVMIDs()
	out := make([]VMSnapshot, 0, len(ids))
	for _, id := range ids {
		out = append(out, e.vms[id].snapshot())
	}
	return out
}

// VM returns one VM, after completing due tasks.
func (e *Emulator) VM(vmid int) (VMSnapshot, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advanceLocked()
	v, ok := e.vms[vmid]
	if !ok {
		return VMSnapshot{}, false
	}
	return v.snapshot(), true
}

// snapshot copies v.
func (v *vm) snapshot() VMSnapshot {
	_, disk := v.bootDisk()
	var tags []string
	if t := v.config["tags"]; t != "" {
		tags = strings.Split(t, ";")
	}
	return VMSnapshot{
		VMID: v.id, Node: v.node, Name: v.config["name"], Status: v.status,
		Template: v.isTemplate(), Tags: tags, Description: v.config["description"],
		Cores: v.cores(), MemoryMiB: v.memoryMiB(), DiskGiB: int((disk + 1<<30 - 1) >> 30),
		Lock: v.lock(), Pool: v.pool, ClonedFrom: v.clonedFrom, AgentRunning: v.agentRunning, Config: maps.Clone(v.config),
	}
}
