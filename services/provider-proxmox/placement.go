package proxmox

import (
	"fmt"
	"slices"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// placement is where a clone may land and what it needs there: the
// allowed nodes (pool placement.nodes; empty: the account's node when it
// pins one, else every node), the storage its disks go to (required when
// the flavor names it, else the account's, a preference), and its vCPUs
// and memory.
type placement struct {
	nodes     []string
	storage   string
	required  bool
	vcpu      int
	memoryMiB int
}

// allowedNodes are the nodes a clone may land on, given a pool's
// placement.nodes: those, else the account's node when it pins one; nil
// means every node.
func (c *client) allowedNodes(poolNodes []string) []string {
	if len(poolNodes) == 0 && c.cfg.Node != "" {
		return []string{c.cfg.Node}
	}
	return poolNodes
}

// storageResource is one storage of one node in GET
// /cluster/resources (type storage).
type storageResource struct {
	Node    string `json:"node"`
	Storage string `json:"storage"`
	Shared  number `json:"shared"`
}

// place picks the node a clone of tpl lands on, and the storage to clone
// onto there ("" keeps the template's): of the allowed nodes, those
// online whose CPUs and free memory (the view's nodes: maxcpu, maxmem −
// mem, the memory of running guests) hold the clone, the one with the most
// free memory (then the most CPUs, then the first by name). A node other
// than the template's qualifies only when every disk of the template is
// on shared storage and, for a flavor's storage, that storage is shared
// and on the node; the account's storage is then dropped when it is not
// (the clone's disks stay on the template's shared storage): tplCfg, the
// template's config, says where its disks are, and the view's storages
// which are shared and where. PVE clones a VM with local disks to its own
// node only, and to another node only onto shared storage. It sends no
// request.
//
// Errors: CAPACITY_UNAVAILABLE with details.path placement.nodes when no
// allowed node can hold the clone (the message says what each has free),
// INVALID_INPUT placement.nodes[i] for an allowed node the cluster does
// not have.
func (s *session) place(view clusterView, tpl vmResource, tplCfg vmConfig, pl placement) (node, storage string, err error) {
	allowed := s.c.allowedNodes(pl.nodes)
	nodes := view.nodes
	for i, name := range allowed {
		if !slices.ContainsFunc(nodes, func(n nodeStatus) bool { return n.Node == name }) {
			return "", "", api.InvalidInput(fmt.Sprintf("placement.nodes[%d]", i), "the cluster has no node %q", name)
		}
	}
	var fit []nodeStatus
	var seen []string
	for _, n := range nodes {
		if len(allowed) > 0 && !slices.Contains(allowed, n.Node) {
			continue
		}
		seen = append(seen, describeNode(n))
		if holds(n, pl.vcpu, pl.memoryMiB) {
			fit = append(fit, n)
		}
	}
	keeps := func(string) bool { return false } // whether a clone onto node keeps the template's storage
	holding := len(fit)
	if slices.ContainsFunc(fit, func(n nodeStatus) bool { return n.Node != tpl.Node }) {
		fit, keeps = reachable(view.storages, tpl, tplCfg, pl, fit)
	}
	if len(fit) == 0 {
		why := ""
		if holding > 0 {
			why = fmt.Sprintf("; %d with room left out: a clone goes to another node than the template's only from and onto "+
				"shared storage, and onto a storage the node has (%s)", holding, pl.storage)
		}
		return "", "", api.Errorf(api.CodeCapacityUnavailable,
			"proxmox: no allowed node can hold %d vCPUs and %d MiB from template %d on %s (%s)%s",
			pl.vcpu, pl.memoryMiB, int(tpl.VMID), tpl.Node, strings.Join(seen, "; "), why).WithPath("placement.nodes")
	}
	best := slices.MaxFunc(fit, func(a, b nodeStatus) int {
		if d := (a.MaxMem - a.Mem) - (b.MaxMem - b.Mem); d != 0 {
			return sign(int64(d))
		}
		if d := a.MaxCPU - b.MaxCPU; d != 0 {
			return sign(int64(d))
		}
		return strings.Compare(b.Node, a.Node) // the first by name wins a tie
	})
	if keeps(best.Node) {
		return best.Node, "", nil
	}
	return best.Node, pl.storage, nil
}

// reachable is fit without the nodes a clone of tpl (whose config is
// cfg) onto pl.storage cannot land on (see place), and keeps, which
// reports whether a clone onto a node of it keeps the template's storage
// (pl.storage not shared or not there, and only preferred).
func reachable(list []storageResource, tpl vmResource, cfg vmConfig, pl placement,
	fit []nodeStatus) ([]nodeStatus, func(string) bool) {
	shared, on := map[string]bool{}, map[string]bool{}
	for _, r := range list {
		shared[r.Storage] = shared[r.Storage] || r.Shared == 1
		on[r.Node+"/"+r.Storage] = true
	}
	movable := true
	for _, st := range diskStorages(cfg) {
		movable = movable && shared[st]
	}
	onto := func(node string) bool { // pl.storage can take the clone there
		return on[node+"/"+pl.storage] && (node == tpl.Node || shared[pl.storage])
	}
	keeps := func(node string) bool { return node != tpl.Node && !pl.required && !onto(node) }
	return slices.DeleteFunc(fit, func(n nodeStatus) bool {
		switch {
		case n.Node == tpl.Node:
			return pl.required && !onto(n.Node)
		case !movable:
			return true
		}
		return pl.required && !onto(n.Node)
	}), keeps
}

// diskStorages are the storages of cfg's disks (CD-ROMs and cloud-init
// drives left out).
func diskStorages(cfg vmConfig) []string {
	var out []string
	for k, d := range cfg {
		if diskKeyPattern.MatchString(k) && !isCDROM(d) {
			st, _, _ := strings.Cut(strings.Split(d, ",")[0], ":")
			out = append(out, st)
		}
	}
	return out
}

// holds reports whether online node n has vcpu CPUs and memoryMiB free.
func holds(n nodeStatus, vcpu, memoryMiB int) bool {
	return n.Status == "online" && int(n.MaxCPU) >= vcpu && int64(n.MaxMem-n.Mem) >= int64(memoryMiB)<<20
}

// describeNode is "pve1: 12 GiB free of 64, 32 CPUs" (or offline).
func describeNode(n nodeStatus) string {
	if n.Status != "online" {
		return n.Node + ": " + n.Status
	}
	return fmt.Sprintf("%s: %d GiB free of %d, %d CPUs", n.Node, int64(n.MaxMem-n.Mem)>>30, int64(n.MaxMem)>>30, int(n.MaxCPU))
}

func sign(d int64) int {
	switch {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}
