package emulator

import (
	"fmt"
	"strconv"
)

// powerAction serves POST /nodes/{node}/qemu/{vmid}/status/{action} for
// start, stop, shutdown, reset and reboot; each runs as a qm{action} task.
//
// Reset and reboot of a stopped VM are a synchronous 500 "VM {id} not
// running". Starting a running VM or a template fails the task. Stopping or
// shutting down a stopped VM succeeds (Guess for shutdown: PVE treats it
// like stop).
func (e *Emulator) powerAction(action string) handler {
	return func(c *call) (any, *apiError) {
		v, err := e.vmOn(c)
		if err != nil {
			return nil, err
		}
		if (action == "reset" || action == "reboot") && v.status != StatusRunning {
			return nil, errInternal("VM %d not running", v.id)
		}
		skiplock, _, err := c.p.boolParam("skiplock")
		if err != nil {
			return nil, err
		}
		spec := taskSpec{
			node: c.node.Name, typ: "qm" + action, id: strconv.Itoa(v.id), user: c.user,
			target: v, checkLock: !skiplock,
		}
		switch action {
		case "start":
			spec.check = func() string {
				if v.isTemplate() {
					return "you can't start a vm if it's a template"
				}
				if v.status == StatusRunning {
					return fmt.Sprintf("VM %d already running", v.id)
				}
				if b := missingBridge(v, e.nodes[v.node]); b != "" {
					return fmt.Sprintf("bridge '%s' does not exist", b)
				}
				return ""
			}
			spec.apply = e.powerEffect(v, func() error {
				v.applyPending()
				v.status, v.startedAt = StatusRunning, e.clock.Now()
				return nil
			})
		case "stop", "shutdown":
			spec.apply = e.powerEffect(v, func() error {
				v.status = StatusStopped
				return nil
			})
		default: // reset, reboot
			spec.apply = e.powerEffect(v, func() error {
				if v.status != StatusRunning {
					return fmt.Errorf("VM %d not running", v.id)
				}
				if action == "reboot" { // a shutdown and a start: pending changes apply
					v.applyPending()
				}
				v.startedAt = e.clock.Now()
				return nil
			})
		}
		return e.startTask(spec).upid, nil
	}
}

// powerEffect wraps a power task's effect: it fails when the VM went away
// while the task ran.
func (e *Emulator) powerEffect(v *vm, effect func() error) func() error {
	return func() error {
		if !e.exists(v) {
			return errMissingConfig(v.node, v.id)
		}
		return effect()
	}
}

// deleteVM serves DELETE /nodes/{node}/qemu/{vmid}[?purge=1&
// destroy-unreferenced-disks=1] as a qmdestroy task. A running, locked or
// protected VM is refused synchronously with a 500.
func (e *Emulator) deleteVM(c *call) (any, *apiError) {
	v, err := e.vmOn(c)
	if err != nil {
		return nil, err
	}
	var skiplock bool
	for _, k := range []string{"purge", "destroy-unreferenced-disks", "skiplock"} {
		b, _, err := c.p.boolParam(k)
		if err != nil {
			return nil, err
		}
		if k == "skiplock" {
			skiplock = b
		}
	}
	switch {
	case v.status == StatusRunning:
		return nil, errInternal("VM %d is running - destroy failed", v.id)
	case v.lock() != "" && !skiplock:
		return nil, errInternal("%s", msgLocked(v.lock()))
	case v.config["protection"] == "1":
		return nil, errInternal("can't remove VM %d - protection mode enabled", v.id)
	}
	t := e.startTask(taskSpec{
		node: c.node.Name, typ: "qmdestroy", id: strconv.Itoa(v.id), user: c.user,
		target: v,
		apply: func() error {
			if !e.exists(v) {
				return errMissingConfig(v.node, v.id)
			}
			if v.status == StatusRunning {
				return fmt.Errorf("VM %d is running - destroy failed", v.id)
			}
			delete(e.vms, v.id)
			e.stopSSH(v)
			return nil
		},
	})
	return t.upid, nil
}
