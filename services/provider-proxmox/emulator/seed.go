package emulator

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SeedSpec describes VMs to create out of band with SeedVMs.
type SeedSpec struct {
	// Count is how many VMs to create.
	Count int `json:"count"`
	// FirstVMID is where the search for free VMIDs starts (default 100);
	// taken VMIDs are skipped.
	FirstVMID int `json:"first_vmid"`
	// Node holds the VMs (default: the first node).
	Node string `json:"node"`
	// NamePrefix makes each name NamePrefix+VMID (default "vm-").
	NamePrefix string `json:"name_prefix"`
	// Tags is a tag list in any PVE input form.
	Tags string `json:"tags"`
	// Description is every VM's description.
	Description string `json:"description"`
	// Running starts the VMs.
	Running bool `json:"running"`
	// Cores (default 2), MemoryMiB (default 2048) and DiskGiB (default 10)
	// size the VMs.
	Cores     int `json:"cores"`
	MemoryMiB int `json:"memory_mib"`
	DiskGiB   int `json:"disk_gib"`
	// Config holds further config keys, overriding generated ones.
	Config map[string]string `json:"config"`
}

// Errors returned by the Go control methods.
var (
	// ErrNoSuchVM means the VMID is not in the cluster.
	ErrNoSuchVM = errors.New("emulator: no such VM")
	// ErrNoSuchNode means the node is not in the cluster.
	ErrNoSuchNode = errors.New("emulator: no such node")
	// ErrInvalid means an argument is out of range or malformed.
	ErrInvalid = errors.New("emulator: invalid argument")
)

// AddTemplate adds a template out of band.
func (e *Emulator) AddTemplate(t Template) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advanceLocked()
	return e.addTemplateLocked(t)
}

// addTemplateLocked adds t. e.mu must be held.
func (e *Emulator) addTemplateLocked(t Template) error {
	t = t.withDefaults(e.nodeOrder[0])
	if t.VMID < 100 {
		return fmt.Errorf("%w: VMID %d is below 100", ErrInvalid, t.VMID)
	}
	if _, taken := e.vms[t.VMID]; taken {
		return fmt.Errorf("%w: VM %d already exists", ErrInvalid, t.VMID)
	}
	if _, ok := e.nodes[t.Node]; !ok {
		return fmt.Errorf("%w: %s", ErrNoSuchNode, t.Node)
	}
	st, ok := e.findStorage(t.Storage)
	if !ok || !st.onNode(t.Node) {
		return fmt.Errorf("%w: storage %q is not on node %s", ErrInvalid, t.Storage, t.Node)
	}
	disk := fmt.Sprintf("%s:base-%d-disk-0,size=%dG", t.Storage, t.VMID, t.DiskGiB)
	cfg, err := e.guestConfig(t.VMID, t.Name, t.Cores, t.MemoryMiB, disk, t.Tags, t.Description, t.Config)
	if err != nil {
		return err
	}
	cfg["template"] = "1"
	e.vms[t.VMID] = &vm{id: t.VMID, node: t.Node, config: cfg, status: StatusStopped, agentRunning: true}
	return nil
}

// guestConfig builds a typical cloud-init guest's config (scsi0 disk,
// cloud-init drive, virtio NIC, agent enabled) with extra overriding it.
func (e *Emulator) guestConfig(id int, name string, cores, memMiB int,
	disk, tags, desc string, extra map[string]string) (map[string]string, error) {
	cfg := map[string]string{
		"name": name, "cores": strconv.Itoa(cores), "sockets": "1", "memory": strconv.Itoa(memMiB),
		"scsihw": "virtio-scsi-single", "scsi0": disk,
		"ide2": fmt.Sprintf("local-lvm:vm-%d-cloudinit,media=cdrom", id),
		"net0": "virtio=" + e.newMAC() + ",bridge=vmbr0,firewall=1",
		"boot": "order=scsi0;net0", "ostype": "l26", "agent": "1", "cpu": "x86-64-v2-AES",
		"smbios1": "uuid=" + e.newUUID(), "vmgenid": e.newUUID(),
	}
	if desc = strings.TrimRight(desc, " \t\r\n"); desc != "" {
		cfg["description"] = desc
	}
	for k, v := range extra {
		cfg[k] = v
	}
	if tags != "" {
		cfg["tags"] = tags
	}
	if t, ok := cfg["tags"]; ok {
		norm, err := NormalizeTags(t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		cfg["tags"] = norm
	}
	return cfg, nil
}

// SeedVMs creates spec.Count VMs out of band (no tasks, no counted calls)
// and returns their VMIDs in ascending order.
func (e *Emulator) SeedVMs(spec SeedSpec) ([]int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advanceLocked()
	if spec.Node == "" {
		spec.Node = e.nodeOrder[0]
	}
	if _, ok := e.nodes[spec.Node]; !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoSuchNode, spec.Node)
	}
	if spec.NamePrefix == "" {
		spec.NamePrefix = "vm-"
	}
	if !dnsNamePattern.MatchString(spec.NamePrefix + "100") {
		return nil, fmt.Errorf("%w: name prefix %q does not make DNS names", ErrInvalid, spec.NamePrefix)
	}
	spec.FirstVMID = max(spec.FirstVMID, 100)
	spec.Cores = cmpOr(spec.Cores, 2)
	spec.MemoryMiB = cmpOr(spec.MemoryMiB, 2048)
	spec.DiskGiB = cmpOr(spec.DiskGiB, 10)
	now := e.clock.Now()
	ids := make([]int, 0, max(spec.Count, 0))
	next := spec.FirstVMID
	for range spec.Count {
		id := e.freeVMID(next)
		next = id + 1
		disk := fmt.Sprintf("local-lvm:vm-%d-disk-0,iothread=1,size=%dG", id, spec.DiskGiB)
		cfg, err := e.guestConfig(id, spec.NamePrefix+strconv.Itoa(id), spec.Cores, spec.MemoryMiB,
			disk, spec.Tags, spec.Description, spec.Config)
		if err != nil {
			return ids, err
		}
		v := &vm{id: id, node: spec.Node, config: cfg, status: StatusStopped, agentRunning: true}
		if spec.Running {
			v.status, v.startedAt = StatusRunning, now
		}
		e.vms[id] = v
		ids = append(ids, id)
	}
	return ids, nil
}

// cmpOr returns v when positive, else def.
func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
