package emulator

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// task is one PVE worker task.
type task struct {
	id       upid
	upid     string
	deadline time.Time
	done     bool
	exit     string
	fail     string       // failure decided at creation ("" = none yet)
	warn     string       // "WARNINGS: N" to report on success
	holds    *vm          // VM whose config flock the task holds
	apply    func() error // effects, run at completion unless failed
	undo     func()       // cleanup when the task fails
}

// taskSpec describes a task to start.
type taskSpec struct {
	node, typ, id, user string
	// target is the VM whose config flock the task takes (nil: none). A
	// held flock fails the task with PVE's lock timeout.
	target *vm
	// checkLock fails the task with "VM is locked (…)" when target's config
	// carries a lock.
	checkLock bool
	// check runs after the lock checks; a non-empty result fails the task.
	check func() string
	apply func() error
	undo  func()
}

// startTask creates and registers a task. Checks are made now; a task that
// fails them ends at once (Guess: PVE waits up to 10 s for a held flock
// before "got timeout"; the emulator does not). Otherwise it runs for the
// type's duration and holds target's flock. An injected task fault
// (InjectTaskFault) overrides a failure, or adds warnings to a success.
func (e *Emulator) startTask(s taskSpec) *task {
	now := e.clock.Now()
	e.pidSeq++
	t := &task{
		id: upid{node: s.node, pid: 0x10000 + e.pidSeq, pstart: e.pstart(now),
			startTime: now.Unix(), typ: s.typ, id: s.id, user: s.user},
		apply: s.apply,
		undo:  s.undo,
	}
	t.upid = t.id.String()
	switch {
	case s.target != nil && s.target.busy != nil:
		t.fail = msgLockTimeout(s.target.id)
	case s.target != nil && s.checkLock && s.target.lock() != "":
		t.fail = msgLocked(s.target.lock())
	case s.check != nil:
		t.fail = s.check()
	}
	t.deadline = now
	if fault, ok := e.takeTaskFault(s.typ); ok {
		if isWarnings(fault) {
			t.warn = fault
		} else {
			t.fail = fault
			t.deadline = now.Add(e.durations[s.typ])
		}
	}
	if t.fail == "" {
		t.deadline = now.Add(e.durations[s.typ])
	}
	if t.deadline.After(now) && s.target != nil && s.target.busy == nil {
		s.target.busy = t
		t.holds = s.target
	}
	e.tasks[t.upid] = t
	e.running = append(e.running, t)
	return t
}

// pstart is the task's process start in clock ticks since the emulator's
// boot, as PVE encodes it.
func (e *Emulator) pstart(now time.Time) uint64 {
	return 0x100000 + uint64(max(now.Sub(e.boot), 0)/(10*time.Millisecond))
}

// advanceLocked completes every task whose deadline has passed, oldest
// deadline first. e.mu must be held.
func (e *Emulator) advanceLocked() {
	if len(e.running) == 0 {
		return
	}
	now := e.clock.Now()
	var due []*task
	keep := e.running[:0]
	for _, t := range e.running {
		if t.deadline.After(now) {
			keep = append(keep, t)
		} else {
			due = append(due, t)
		}
	}
	clear(e.running[len(keep):])
	e.running = keep
	slices.SortStableFunc(due, func(a, b *task) int { return a.deadline.Compare(b.deadline) })
	for _, t := range due {
		e.finish(t)
	}
}

// finish completes t: releases its flock, applies its effects or undoes
// them, and sets its exit status.
func (e *Emulator) finish(t *task) {
	t.done = true
	if t.holds != nil && t.holds.busy == t {
		t.holds.busy = nil
	}
	if t.fail == "" && t.apply != nil {
		if err := t.apply(); err != nil {
			t.fail = err.Error()
		}
	}
	if t.fail != "" {
		t.exit = t.fail
		if t.undo != nil {
			t.undo()
		}
		return
	}
	t.exit = cmp.Or(t.warn, "OK")
}

// upidFields are the fields of the task's UPID, as both the task's status
// and the node's task list give them, with status (each spells a running
// task its own way).
func (t *task) upidFields(status string) map[string]any {
	return map[string]any{
		"upid":      t.upid,
		"node":      t.id.node,
		"pid":       t.id.pid,
		"pstart":    t.id.pstart,
		"starttime": t.id.startTime,
		"type":      t.id.typ,
		"id":        t.id.id,
		"user":      t.id.user,
		"status":    status,
	}
}

// statusView is the task's /tasks/{upid}/status reply.
func (t *task) statusView() map[string]any {
	out := t.upidFields("running")
	if t.done {
		out["status"] = "stopped"
		out["exitstatus"] = t.exit
	}
	return out
}

// listView is the task's entry in GET /nodes/{node}/tasks: its UPID's
// fields, and its exit status (status) and endtime once it ended, else
// status "RUNNING".
func (t *task) listView() map[string]any {
	out := t.upidFields("RUNNING")
	if t.done {
		out["status"] = t.exit
		out["endtime"] = max(t.deadline.Unix(), t.id.startTime)
	}
	return out
}

// isWarnings reports whether an exit status is PVE's success with warnings.
func isWarnings(exit string) bool { return strings.HasPrefix(exit, "WARNINGS") }
