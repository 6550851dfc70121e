package emulator

import (
	"slices"
	"strings"
)

// Storage is one storage of the cluster besides the installer's defaults
// (Options.Storages).
type Storage struct {
	// Name is the storage id, e.g. "ceph-vm".
	Name string `json:"name"`
	// Plugin is its type (default "rbd" when Shared, else "lvmthin").
	Plugin string `json:"plugin"`
	// TotalBytes is its size (default 1 TiB).
	TotalBytes int64 `json:"total_bytes"`
	// Shared makes it one storage every node of Nodes reaches (Ceph, NFS):
	// a template whose disks are all on shared storage can be cloned to
	// any of them (clone target=).
	Shared bool `json:"shared"`
	// Nodes are the nodes that have it (empty: every node).
	Nodes []string `json:"nodes"`
}

// storageDef is a storage of the cluster. Guess: every node has PVE's
// installer defaults, "local" (directory) and "local-lvm" (LVM-thin);
// Options.Storages adds more.
type storageDef struct {
	name, plugin, content string
	total                 int64
	shared                bool
	nodes                 []string // nil: every node
}

// defaultStorages are the storages of every node.
var defaultStorages = []storageDef{
	{name: "local", plugin: "dir", content: "iso,vztmpl,backup,snippets", total: 100 << 30},
	{name: "local-lvm", plugin: "lvmthin", content: "images,rootdir", total: 1 << 40},
}

// storageDefs are the defaults and extra.
func storageDefs(extra []Storage) []storageDef {
	out := slices.Clone(defaultStorages)
	for _, s := range extra {
		d := storageDef{name: s.Name, plugin: s.Plugin, content: "images,rootdir", total: s.TotalBytes,
			shared: s.Shared, nodes: slices.Clone(s.Nodes)}
		if d.plugin == "" {
			d.plugin = "lvmthin"
			if d.shared {
				d.plugin = "rbd"
			}
		}
		if d.total <= 0 {
			d.total = 1 << 40
		}
		out = append(out, d)
	}
	return out
}

// onNode reports whether node has s.
func (s storageDef) onNode(node string) bool { return s.nodes == nil || slices.Contains(s.nodes, node) }

// findStorage returns the named storage definition. e.mu must be held.
func (e *Emulator) findStorage(name string) (storageDef, bool) {
	for _, s := range e.storages {
		if s.name == name {
			return s, true
		}
	}
	return storageDef{}, false
}

// storageUsage sums the sizes of the drives of every VM by storage, in
// one pass over the VMs: by "<node>/<storage>" for a node's own storage
// and by "/<storage>" for a shared one (every node's drives on it).
// e.mu must be held.
func (e *Emulator) storageUsage() map[string]int64 {
	shared := map[string]bool{}
	for _, s := range e.storages {
		shared[s.name] = s.shared
	}
	used := map[string]int64{}
	for _, v := range e.vms {
		for k, d := range v.config {
			if !diskKeyPattern.MatchString(k) || isCDROM(d) {
				continue
			}
			storage, _, ok := strings.Cut(d, ":")
			if !ok {
				continue
			}
			node := v.node
			if shared[storage] {
				node = ""
			}
			used[node+"/"+storage] += driveSize(d)
		}
	}
	return used
}

// storageUsed is what storageUsage holds for storage s of node.
func storageUsed(usage map[string]int64, node string, s storageDef) int64 {
	if s.shared {
		node = ""
	}
	return usage[node+"/"+s.name]
}

// storageView renders storage s of node (its use from usage, see
// storageUsage); cluster selects the /cluster/resources shape over the
// /nodes/{node}/storage one.
func (e *Emulator) storageView(node string, s storageDef, cluster bool, usage map[string]int64) map[string]any {
	used := storageUsed(usage, node, s)
	shared := 0
	if s.shared {
		shared = 1
	}
	if cluster {
		return map[string]any{
			"id": "storage/" + node + "/" + s.name, "type": "storage", "storage": s.name,
			"node": node, "status": "available", "plugintype": s.plugin, "content": s.content,
			"disk": used, "maxdisk": s.total, "shared": shared,
		}
	}
	return map[string]any{
		"storage": s.name, "type": s.plugin, "content": s.content, "active": 1, "enabled": 1,
		"shared": shared, "total": s.total, "used": used, "avail": s.total - used,
		"used_fraction": float64(used) / float64(s.total),
	}
}

// getStorageList serves GET /nodes/{node}/storage: the node's storages.
func (e *Emulator) getStorageList(c *call) (any, *apiError) {
	out := make([]any, 0, len(e.storages))
	usage := e.storageUsage()
	for _, s := range e.storages {
		if s.onNode(c.node.Name) {
			out = append(out, e.storageView(c.node.Name, s, false, usage))
		}
	}
	return out, nil
}

// getStorageStatus serves GET /nodes/{node}/storage/{storage}/status.
func (e *Emulator) getStorageStatus(c *call) (any, *apiError) {
	name := c.r.PathValue("storage")
	s, ok := e.findStorage(name)
	if !ok {
		return nil, errInternal("storage '%s' does not exist", name)
	}
	if !s.onNode(c.node.Name) {
		return nil, errNotOnNode(name, c.node.Name)
	}
	return e.storageView(c.node.Name, s, false, e.storageUsage()), nil
}

// errNotOnNode is PVE's storage_check_node refusal.
func errNotOnNode(storage, node string) *apiError {
	return errInternal("storage '%s' is not available on node '%s'", storage, node)
}
