package emulator

import (
	"fmt"
	"strconv"

	"better-compute.io/compute/pkg/api"
)

// getConfig serves GET /nodes/{node}/qemu/{vmid}/config: the flat config
// plus its digest. Integer and boolean keys (cores, sockets, onboot,
// template, …) are JSON numbers; everything else, memory included (a
// property string since PVE 8.1), is a string.
func (e *Emulator) getConfig(c *call) (any, *apiError) {
	v, err := e.vmOn(c)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(v.config)+1)
	for k, val := range v.config {
		out[k] = configJSONValue(k, val)
	}
	if current, _, _ := c.p.boolParam("current"); !current {
		for k, val := range v.pending { // current=0 (the default) shows pending values
			out[k] = configJSONValue(k, val)
		}
	}
	out["digest"] = v.digest()
	if v.sshPort != 0 {
		out[api.EmulatorSSHPortKey] = strconv.Itoa(v.sshPort) // emulator-only
	}
	return out, nil
}

// configJSONValue renders one config value as PVE's JSON does.
func configJSONValue(key, val string) any {
	if _, isInt := intKeys[key]; isInt || boolKeys[key] {
		if n, err := strconv.Atoi(val); err == nil {
			return n
		}
	}
	return val
}

// configUpdateOn is the VM a config call names and the update its
// parameters ask for: 500 for a VM not on the node, 400 for bad parameters.
func (e *Emulator) configUpdateOn(c *call) (*vm, *configUpdate, *apiError) {
	v, err := e.vmOn(c)
	if err != nil {
		return nil, nil, err
	}
	u, err := parseConfigUpdate(c.p)
	if err != nil {
		return nil, nil, err
	}
	return v, u, nil
}

// postConfig serves POST /nodes/{node}/qemu/{vmid}/config: validated now,
// applied by a qmconfig task (which checks flock, lock and digest).
func (e *Emulator) postConfig(c *call) (any, *apiError) {
	v, u, err := e.configUpdateOn(c)
	if err != nil {
		return nil, err
	}
	t := e.startTask(taskSpec{
		node: c.node.Name, typ: "qmconfig", id: strconv.Itoa(v.id), user: c.user,
		target: v, checkLock: !u.skiplock,
		apply: func() error {
			if !e.exists(v) {
				return errMissingConfig(v.node, v.id)
			}
			return e.applyConfigUpdate(v, u)
		},
	})
	return t.upid, nil
}

// putConfig serves PUT /nodes/{node}/qemu/{vmid}/config: applied at once,
// replying null. A held flock is an immediate 500 (Guess: PVE waits up to
// 10 s first).
func (e *Emulator) putConfig(c *call) (any, *apiError) {
	v, u, err := e.configUpdateOn(c)
	if err != nil {
		return nil, err
	}
	switch {
	case v.busy != nil:
		return nil, errInternal("%s", msgLockTimeout(v.id))
	case v.lock() != "" && !u.skiplock:
		return nil, errInternal("%s", msgLocked(v.lock()))
	}
	if applyErr := e.applyConfigUpdate(v, u); applyErr != nil {
		return nil, errInternal("%s", applyErr.Error())
	}
	return nil, nil
}

// putResize serves PUT /nodes/{node}/qemu/{vmid}/resize (disk, size):
// size is absolute ("40G") or relative ("+10G"). The resize task fails on
// a missing disk, a CD-ROM or a smaller size.
func (e *Emulator) putResize(c *call) (any, *apiError) {
	v, err := e.vmOn(c)
	if err != nil {
		return nil, err
	}
	disk, size := c.p["disk"], c.p["size"]
	errs := map[string]string{}
	switch {
	case disk == "":
		errs["disk"] = "property is missing and it is not optional"
	case !diskKeyPattern.MatchString(disk):
		errs["disk"] = fmt.Sprintf("value '%s' does not have a value in the enumeration", disk)
	}
	req, relative, sizeErr := parseSize(size)
	switch {
	case size == "":
		errs["size"] = "property is missing and it is not optional"
	case sizeErr != nil:
		errs["size"] = sizeErr.Error()
	}
	if len(errs) > 0 {
		return nil, errParams(errs)
	}
	var newSize int64
	t := e.startTask(taskSpec{
		node: c.node.Name, typ: "resize", id: strconv.Itoa(v.id), user: c.user,
		target: v, checkLock: true,
		check: func() string {
			drive, ok := v.config[disk]
			if !ok {
				// Guess: the wording for a disk key that is not configured.
				return fmt.Sprintf("disk '%s' does not exist", disk)
			}
			if isCDROM(drive) {
				return "you can't resize a cdrom"
			}
			cur := driveSize(drive)
			newSize = req
			if relative {
				newSize = cur + req
			}
			if newSize < cur {
				return "shrinking disks is not supported"
			}
			return ""
		},
		apply: func() error {
			if !e.exists(v) {
				return errMissingConfig(v.node, v.id)
			}
			v.config[disk] = withDriveSize(v.config[disk], newSize)
			return nil
		},
	})
	return t.upid, nil
}

// exists reports whether v is still the VM registered under its VMID.
func (e *Emulator) exists(v *vm) bool { return e.vms[v.id] == v }
