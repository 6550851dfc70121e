package emulator

import (
	"strings"
)

// storageDef is a storage every node has. Guess: the emulator offers PVE's
// installer defaults, "local" (directory) and "local-lvm" (LVM-thin).
type storageDef struct {
	name, plugin, content string
	total                 int64
}

// nodeStorages are the storages of every node.
var nodeStorages = []storageDef{
	{name: "local", plugin: "dir", content: "iso,vztmpl,backup,snippets", total: 100 << 30},
	{name: "local-lvm", plugin: "lvmthin", content: "images,rootdir", total: 1 << 40},
}

// findStorage returns the named storage definition.
func findStorage(name string) (storageDef, bool) {
	for _, s := range nodeStorages {
		if s.name == name {
			return s, true
		}
	}
	return storageDef{}, false
}

// storageUsed sums the sizes of the drives on storage s of node.
func (e *Emulator) storageUsed(node, storage string) int64 {
	var used int64
	for _, v := range e.vms {
		if v.node != node {
			continue
		}
		for k, d := range v.config {
			if diskKeyPattern.MatchString(k) && strings.HasPrefix(d, storage+":") && !isCDROM(d) {
				used += driveSize(d)
			}
		}
	}
	return used
}

// storageView renders storage s of node; cluster selects the
// /cluster/resources shape over the /nodes/{node}/storage one.
func (e *Emulator) storageView(node string, s storageDef, cluster bool) map[string]any {
	used := e.storageUsed(node, s.name)
	if cluster {
		return map[string]any{
			"id": "storage/" + node + "/" + s.name, "type": "storage", "storage": s.name,
			"node": node, "status": "available", "plugintype": s.plugin, "content": s.content,
			"disk": used, "maxdisk": s.total, "shared": 0,
		}
	}
	return map[string]any{
		"storage": s.name, "type": s.plugin, "content": s.content, "active": 1, "enabled": 1,
		"shared": 0, "total": s.total, "used": used, "avail": s.total - used,
		"used_fraction": float64(used) / float64(s.total),
	}
}

// getStorageList serves GET /nodes/{node}/storage.
func (e *Emulator) getStorageList(c *call) (any, *apiError) {
	out := make([]any, 0, len(nodeStorages))
	for _, s := range nodeStorages {
		out = append(out, e.storageView(c.node.Name, s, false))
	}
	return out, nil
}

// getStorageStatus serves GET /nodes/{node}/storage/{storage}/status.
func (e *Emulator) getStorageStatus(c *call) (any, *apiError) {
	name := c.r.PathValue("storage")
	s, ok := findStorage(name)
	if !ok {
		return nil, errInternal("storage '%s' does not exist", name)
	}
	return e.storageView(c.node.Name, s, false), nil
}
