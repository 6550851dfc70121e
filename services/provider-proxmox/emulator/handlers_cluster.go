package emulator

import (
	"fmt"
	"slices"
	"strconv"
)

// vmResource is one guest in /cluster/resources.
type vmResource struct {
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	VMID      int     `json:"vmid"`
	Node      string  `json:"node"`
	Status    string  `json:"status"`
	Name      string  `json:"name,omitempty"`
	Template  int     `json:"template"`
	MaxCPU    int     `json:"maxcpu"`
	CPU       float64 `json:"cpu"`
	MaxMem    int64   `json:"maxmem"`
	Mem       int64   `json:"mem"`
	MaxDisk   int64   `json:"maxdisk"`
	Disk      int64   `json:"disk"`
	Uptime    int64   `json:"uptime"`
	NetIn     int64   `json:"netin"`
	NetOut    int64   `json:"netout"`
	DiskRead  int64   `json:"diskread"`
	DiskWrite int64   `json:"diskwrite"`
	Tags      string  `json:"tags,omitempty"`
	Lock      string  `json:"lock,omitempty"`
	Pool      string  `json:"pool,omitempty"`
}

// getVersion serves GET /version.
func (e *Emulator) getVersion(*call) (any, *apiError) {
	if e.legacy {
		return map[string]string{"version": "8.2.4", "release": "8.2", "repoid": "faa83925c9641325"}, nil
	}
	return map[string]string{"version": "8.3.0", "release": "8.3", "repoid": "c1689ccb1065a83b"}, nil
}

// getClusterResources serves GET /cluster/resources[?type=vm|node|storage|sdn].
func (e *Emulator) getClusterResources(c *call) (any, *apiError) {
	typ := c.p["type"]
	out := []any{}
	switch typ {
	case "", "vm", "node", "storage", "sdn":
	default:
		return nil, errParam("type", fmt.Sprintf("value '%s' does not have a value in the enumeration 'vm, storage, node, sdn'", typ))
	}
	if typ == "" || typ == "vm" {
		for _, id := range e.sortedVMIDs() {
			out = append(out, e.vmResource(e.vms[id], c))
		}
	}
	if typ == "" || typ == "node" {
		for _, name := range e.nodeOrder {
			out = append(out, e.nodeResource(e.nodes[name], c))
		}
	}
	if typ == "" || typ == "storage" {
		usage := e.storageUsage()
		for _, name := range e.nodeOrder {
			if e.nodes[name].Offline {
				continue
			}
			for _, s := range e.storages {
				if s.onNode(name) {
					out = append(out, e.storageView(name, s, true, usage))
				}
			}
		}
	}
	return out, nil
}

// vmResource renders v for /cluster/resources: id, vmid, node and type
// from the cluster's VM list, lock and tags from the config (all current),
// the rest from the RRD cache (see guestStats). A VMID pvestatd has not
// reported yet shows status "unknown", no name and no sizes; guests on an
// offline node show status "unknown".
func (e *Emulator) vmResource(v *vm, c *call) vmResource {
	r := vmResource{
		ID: "qemu/" + strconv.Itoa(v.id), Type: "qemu", VMID: v.id, Node: v.node,
		Status: "unknown", Tags: v.config["tags"], Lock: v.lock(), Pool: v.pool,
	}
	if s, ok := e.guestStats(v, c.now); ok {
		r.Status, r.Name, r.MaxCPU, r.MaxMem, r.MaxDisk, r.Uptime = s.status, s.name, s.maxCPU, s.maxMem, s.maxDisk, s.uptime
		if s.template {
			r.Template = 1
		}
	}
	if r.Status == StatusRunning {
		r.CPU = 0.01
		r.Mem = r.MaxMem / 4
	}
	if n := e.nodes[v.node]; n == nil || n.Offline {
		r.Status = "unknown"
	}
	return r
}

// nodeResource renders a node for /cluster/resources and /nodes.
func (e *Emulator) nodeResource(n *Node, c *call) map[string]any {
	out := map[string]any{"id": "node/" + n.Name, "type": "node", "node": n.Name, "status": "online", "level": ""}
	if n.Offline {
		out["status"] = "offline"
		return out
	}
	used := e.nodeMemoryUsed(n.Name)
	out["cpu"] = 0.02
	out["maxcpu"] = n.CPUs
	out["mem"] = used
	out["maxmem"] = n.MemoryBytes
	out["disk"] = int64(8) << 30
	out["maxdisk"] = int64(100) << 30
	out["uptime"] = int64(c.now.Sub(e.boot).Seconds()) + 86400
	return out
}

// nodeMemoryUsed is the memory of the running guests on node (Guess: the
// emulator charges a running VM its full configured memory).
func (e *Emulator) nodeMemoryUsed(node string) int64 {
	var used int64
	for _, v := range e.vms {
		if v.node == node && v.status == StatusRunning {
			used += int64(v.memoryMiB()) << 20
		}
	}
	return used
}

// getNextID serves GET /cluster/nextid[?vmid=N]: the lowest free VMID from
// 100, or N itself when free. The reply is a string, as in PVE.
func (e *Emulator) getNextID(c *call) (any, *apiError) {
	if s, ok := c.p["vmid"]; ok {
		id, err := parseVMID("vmid", s)
		if err != nil {
			return nil, err
		}
		if _, taken := e.vms[id]; taken {
			return nil, errParam("vmid", fmt.Sprintf("VM %d already exists", id))
		}
		return strconv.Itoa(id), nil
	}
	return strconv.Itoa(e.freeVMID(100)), nil
}

// freeVMID is the lowest unused VMID >= from.
func (e *Emulator) freeVMID(from int) int {
	id := from
	for {
		if _, taken := e.vms[id]; !taken {
			return id
		}
		id++
	}
}

// sortedVMIDs returns every VMID in ascending order.
func (e *Emulator) sortedVMIDs() []int {
	ids := make([]int, 0, len(e.vms))
	for id := range e.vms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
