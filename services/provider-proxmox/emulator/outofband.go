package emulator

import (
	"fmt"
	"slices"
)

// withVM runs fn on VM vmid with e.mu held and due tasks completed.
func (e *Emulator) withVM(vmid int, fn func(v *vm) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advanceLocked()
	v, ok := e.vms[vmid]
	if !ok {
		return fmt.Errorf("%w: %d", ErrNoSuchVM, vmid)
	}
	return fn(v)
}

// SetAgentRunning sets whether VM vmid's guest agent answers (default
// true; it also needs the VM running and "agent" enabled in its config).
func (e *Emulator) SetAgentRunning(vmid int, running bool) error {
	return e.withVM(vmid, func(v *vm) error {
		v.agentRunning = running
		return nil
	})
}

// SetAgentInterfaces sets what VM vmid's guest agent reports; nil restores
// the interfaces derived from net0 and ipconfig0.
func (e *Emulator) SetAgentInterfaces(vmid int, ifaces []AgentInterface) error {
	return e.withVM(vmid, func(v *vm) error {
		v.agentIfaces = slices.Clone(ifaces)
		return nil
	})
}

// SetVMStatus changes VM vmid's power state out of band (a crash, a guest
// shutdown, a start by someone else). status is StatusRunning or
// StatusStopped.
func (e *Emulator) SetVMStatus(vmid int, status string) error {
	if status != StatusRunning && status != StatusStopped {
		return fmt.Errorf("%w: status %q", ErrInvalid, status)
	}
	return e.withVM(vmid, func(v *vm) error {
		if status == StatusRunning && v.status != StatusRunning {
			v.startedAt = e.clock.Now()
		}
		v.status = status
		return nil
	})
}

// SetVMLock sets (or, with "", removes) the lock in VM vmid's config, as a
// backup or migration would.
func (e *Emulator) SetVMLock(vmid int, lock string) error {
	return e.withVM(vmid, func(v *vm) error {
		if lock == "" {
			delete(v.config, "lock")
		} else {
			v.config["lock"] = lock
		}
		return nil
	})
}

// DeleteVM removes VM vmid out of band. Tasks still running on it fail
// when they complete (a clone's task writes its config regardless).
func (e *Emulator) DeleteVM(vmid int) error {
	return e.withVM(vmid, func(v *vm) error {
		delete(e.vms, vmid)
		e.stopSSH(v)
		return nil
	})
}

// withNode runs fn on the named node with e.mu held.
func (e *Emulator) withNode(name string, fn func(n *Node)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSuchNode, name)
	}
	fn(n)
	return nil
}

// SetNodeOnline takes a node off line (its routes answer 595, its guests
// show "unknown") or brings it back.
func (e *Emulator) SetNodeOnline(node string, online bool) error {
	return e.withNode(node, func(n *Node) { n.Offline = !online })
}

// SetNodeMemory sets a node's total memory in bytes.
func (e *Emulator) SetNodeMemory(node string, bytes int64) error {
	if bytes <= 0 {
		return fmt.Errorf("%w: memory %d", ErrInvalid, bytes)
	}
	return e.withNode(node, func(n *Node) { n.MemoryBytes = bytes })
}
