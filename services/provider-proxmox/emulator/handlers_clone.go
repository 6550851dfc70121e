package emulator

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// cloneParams are the parameters POST …/clone accepts.
var cloneParams = map[string]bool{
	"newid": true, "name": true, "description": true, "full": true, "target": true,
	"storage": true, "pool": true, "format": true, "snapname": true, "bwlimit": true,
}

// postClone serves POST /nodes/{node}/qemu/{vmid}/clone. Checks are
// synchronous (500s); on success the target VMID is taken at once by a
// config holding only "lock: clone", and a qmclone task (id = the source
// VMID) writes the full config when it completes. Meanwhile calls that
// mutate the target fail with "VM is locked (clone)": like PVE, the task
// does not hold the target's flock. A failed clone task removes the
// target. The source is not locked either (PVE takes a shared flock for a
// stopped source).
func (e *Emulator) postClone(c *call) (any, *apiError) {
	src, err := e.vmOn(c)
	if err != nil {
		return nil, err
	}
	req, err := e.parseClone(c, src)
	if err != nil {
		return nil, err
	}
	switch {
	case src.busy != nil:
		return nil, errInternal("%s", msgLockTimeout(src.id))
	case src.lock() != "":
		return nil, errInternal("%s", msgLocked(src.lock()))
	}
	if _, taken := e.vms[req.newID]; taken {
		return nil, errInternal("unable to create VM %d: config file already exists", req.newID)
	}
	target := &vm{id: req.newID, node: req.target, config: map[string]string{"lock": "clone"},
		status: StatusStopped, agentRunning: true, clonedFrom: src.id}
	e.vms[req.newID] = target
	srcConfig := maps.Clone(src.config)
	t := e.startTask(taskSpec{
		node: c.node.Name, typ: "qmclone", id: strconv.Itoa(src.id), user: c.user,
		apply: func() error {
			if cur, ok := e.vms[req.newID]; ok && cur != target {
				return fmt.Errorf("unable to create VM %d: config file already exists", req.newID)
			}
			target.config = e.cloneConfig(srcConfig, req)
			target.pool = req.pool
			e.vms[req.newID] = target
			e.startSSH(target)
			return nil
		},
		undo: func() {
			if e.vms[req.newID] == target {
				delete(e.vms, req.newID)
			}
		},
	})
	return t.upid, nil
}

// parseClone validates the clone parameters against src and the cluster.
func (e *Emulator) parseClone(c *call, src *vm) (cloneRequest, *apiError) {
	errs := map[string]string{}
	for k := range c.p {
		if !cloneParams[k] {
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
		}
	}
	req := cloneRequest{srcName: src.name(), name: c.p["name"], pool: c.p["pool"],
		storage: c.p["storage"], target: c.node.Name}
	if s, ok := c.p["newid"]; !ok {
		errs["newid"] = "property is missing and it is not optional"
	} else if id, err := parseVMID("newid", s); err != nil {
		maps.Copy(errs, err.errors)
	} else {
		req.newID = id
	}
	if req.name != "" && !dnsNamePattern.MatchString(req.name) {
		errs["name"] = "invalid format - value does not look like a valid DNS name"
	}
	req.description, req.setDesc = c.p["description"]
	req.description = strings.TrimRight(req.description, " \t\r\n")
	full, fullSet, err := c.p.boolParam("full")
	if err != nil {
		maps.Copy(errs, err.errors)
	}
	if len(errs) > 0 {
		return req, errParams(errs)
	}
	// PVE: full clone is the default for a VM, linked for a template.
	req.full = full || (!fullSet && !src.isTemplate())
	if t := c.p["target"]; t != "" {
		n, ok := e.nodes[t]
		if !ok {
			return req, errInternal("no such cluster node '%s'", t)
		}
		if n.Offline {
			// Guess: the wording for an offline target node.
			return req, errInternal("target node '%s' is offline", t)
		}
		req.target = t
	}
	if req.storage != "" {
		st, ok := e.findStorage(req.storage)
		if !ok {
			return req, errInternal("storage '%s' does not exist", req.storage)
		}
		if !req.full {
			return req, errInternal("parameter 'storage' not allowed for linked clones")
		}
		if !st.onNode(req.target) {
			return req, errNotOnNode(req.storage, req.target)
		}
	}
	if req.target != src.node {
		if local := e.localDisk(src); local != "" {
			// PVE's clone_vm: only a VM whose disks are all on shared
			// storage is cloned to another node.
			return req, errInternal("can't clone VM to node '%s' (VM uses local storage)", req.target)
		}
		if st, _ := e.findStorage(req.storage); req.storage != "" && !st.shared {
			return req, errInternal("can't clone to non-shared storage '%s'", req.storage)
		}
	}
	if !req.full && !src.isTemplate() {
		// Guess: PVE refuses a linked clone of a non-template per drive.
		key, _ := src.bootDisk()
		return req, errInternal("Linked clone feature is not supported for drive '%s'", key)
	}
	return req, nil
}

// localDisk is the storage of the first disk of v that is not on shared
// storage ("" when every disk is: v can be cloned to another node).
func (e *Emulator) localDisk(v *vm) string {
	for k, d := range v.config {
		if !diskKeyPattern.MatchString(k) || isCDROM(d) {
			continue
		}
		name, _, _ := strings.Cut(strings.Split(d, ",")[0], ":")
		if st, ok := e.findStorage(name); !ok || !st.shared {
			return name
		}
	}
	return ""
}
