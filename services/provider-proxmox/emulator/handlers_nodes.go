package emulator

// getNodes serves GET /nodes.
func (e *Emulator) getNodes(c *call) (any, *apiError) {
	out := make([]any, 0, len(e.nodeOrder))
	for _, name := range e.nodeOrder {
		out = append(out, e.nodeResource(e.nodes[name], c))
	}
	return out, nil
}

// getNodeStatus serves GET /nodes/{node}/status.
func (e *Emulator) getNodeStatus(c *call) (any, *apiError) {
	n := c.node
	used := e.nodeMemoryUsed(n.Name)
	pveVersion := "pve-manager/8.3.0/c1689ccb1065a83b"
	if e.legacy {
		pveVersion = "pve-manager/8.2.4/faa83925c9641325"
	}
	return map[string]any{
		"cpu":        0.02,
		"cpuinfo":    map[string]any{"cpus": n.CPUs, "cores": max(n.CPUs/2, 1), "sockets": 1, "model": "Emulated CPU", "mhz": "2400.000"},
		"memory":     map[string]any{"total": n.MemoryBytes, "used": used, "free": max(n.MemoryBytes-used, 0)},
		"uptime":     int64(c.now.Sub(e.boot).Seconds()) + 86400,
		"pveversion": pveVersion,
		"kversion":   "Linux 6.8.12-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.8.12-1",
		"loadavg":    []string{"0.10", "0.08", "0.05"},
	}, nil
}

// getQemuList serves GET /nodes/{node}/qemu: the node's guests as
// vmstatus reports them.
func (e *Emulator) getQemuList(c *call) (any, *apiError) {
	out := []any{}
	for _, id := range e.sortedVMIDs() {
		if v := e.vms[id]; v.node == c.node.Name {
			out = append(out, e.vmStatus(v, c))
		}
	}
	return out, nil
}

// vmStatus is PVE's vmstatus() for v: the /qemu list entry and the base of
// status/current. PVE adds template, lock, tags, agent and pid only when
// they apply.
func (e *Emulator) vmStatus(v *vm, c *call) map[string]any {
	_, disk := v.bootDisk()
	maxMem := int64(v.memoryMiB()) << 20
	out := map[string]any{
		"vmid": v.id, "name": v.name(), "status": v.status, "cpus": v.cpus(),
		"maxmem": maxMem, "maxdisk": disk, "disk": 0, "uptime": v.uptime(c.now),
		"cpu": 0, "mem": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
	}
	if v.status == StatusRunning {
		out["cpu"] = 0.01
		out["mem"] = maxMem / 4
		out["pid"] = 1000 + v.id
	}
	if v.isTemplate() {
		out["template"] = 1
	}
	if l := v.lock(); l != "" {
		out["lock"] = l
	}
	if t := v.config["tags"]; t != "" {
		out["tags"] = t
	}
	if v.agentConfigured() {
		out["agent"] = 1
	}
	return out
}

// getStatusCurrent serves GET /nodes/{node}/qemu/{vmid}/status/current.
func (e *Emulator) getStatusCurrent(c *call) (any, *apiError) {
	v, err := e.vmOn(c)
	if err != nil {
		return nil, err
	}
	out := e.vmStatus(v, c)
	out["qmpstatus"] = v.status
	out["ha"] = map[string]any{"managed": 0}
	if v.status == StatusRunning {
		out["running-machine"] = "pc-i440fx-9.0+pve0"
		out["running-qemu"] = "9.0.2"
	}
	return out, nil
}
