package emulator

import (
	"context"
	"fmt"
	"time"
)

// RouteFault makes the next Count calls of Route fail with Status and
// Message (after authentication, before the handler runs).
type RouteFault struct {
	// Route is a route key (one of the Route* constants), or "*" for any
	// API route.
	Route string `json:"route"`
	// Count is how many calls fail (default 1).
	Count int `json:"count"`
	// Skip is how many calls of Route pass before the fault's Count
	// calls fail (default 0), e.g. 1 to fail a create's second PUT
	// …/config (its tag) and not its first.
	Skip int `json:"skip,omitempty"`
	// Status is the HTTP status, e.g. 500, 403, 595 (default 500).
	Status int `json:"status"`
	// Message is the reason phrase and, in modern style, the body's
	// "message", e.g. "Permission check failed (/vms/100, VM.PowerMgmt)".
	Message string `json:"message"`
	// Errors are per-parameter errors for 400 replies.
	Errors map[string]string `json:"errors,omitempty"`
	// Style overrides the emulator's error style for this fault.
	Style ErrorStyle `json:"style,omitempty"`
}

// TaskFault makes the next Count tasks of Type end with ExitStatus. An exit
// status starting with "WARNINGS" ("WARNINGS: 1") is a success: the task's
// effects still apply. Any other text is a failure: effects are not applied
// and a failed clone removes its target.
type TaskFault struct {
	// Type is a task type: qmclone, qmconfig, resize, qmstart, qmstop,
	// qmshutdown, qmreset, qmreboot or qmdestroy.
	Type string `json:"type"`
	// ExitStatus is the task's exit status.
	ExitStatus string `json:"exitstatus"`
	// Count is how many tasks it applies to (default 1).
	Count int `json:"count"`
}

// Latency delays every call of Route by Delay (real time), or holds it
// until the client gives up (or ClearFaults/Reset) when Hang is set. The
// request's context is honoured: a cancelled call gets no reply.
type Latency struct {
	// Route is a route key (one of the Route* constants), or "*".
	Route string
	// Delay is added before the call is handled.
	Delay time.Duration
	// Hang holds the call instead of answering.
	Hang bool
}

// ExitStorageLockTimeout is an example TaskFault exit status: a clone
// failing on a busy storage lock.
const ExitStorageLockTimeout = "clone failed: cfs-lock 'storage-local-lvm' error: got lock request timeout"

// InjectRouteFault queues f. Faults for the same route are used in order.
func (e *Emulator) InjectRouteFault(f RouteFault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	if f.Status == 0 {
		f.Status = 500
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.routeFaults = append(e.routeFaults, &f)
}

// InjectTaskFault queues f for the next tasks of f.Type.
func (e *Emulator) InjectTaskFault(f TaskFault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for range f.Count {
		e.taskFaults[f.Type] = append(e.taskFaults[f.Type], f.ExitStatus)
	}
}

// FailNextTask makes the next task of taskType fail with exitStatus.
func (e *Emulator) FailNextTask(taskType, exitStatus string) {
	e.InjectTaskFault(TaskFault{Type: taskType, ExitStatus: exitStatus})
}

// WarnNextTask makes the next task of taskType succeed with
// "WARNINGS: {warnings}".
func (e *Emulator) WarnNextTask(taskType string, warnings int) {
	e.InjectTaskFault(TaskFault{Type: taskType, ExitStatus: fmt.Sprintf("WARNINGS: %d", warnings)})
}

// SetLatency sets (or, with zero Delay and no Hang, clears) the latency of
// l.Route.
func (e *Emulator) SetLatency(l Latency) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l.Delay <= 0 && !l.Hang {
		delete(e.latency, l.Route)
		return
	}
	e.latency[l.Route] = l
}

// ClearFaults removes all route faults, task faults and latencies, and
// releases hung calls.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clearFaultsLocked()
}

// clearFaultsLocked is ClearFaults with e.mu held.
func (e *Emulator) clearFaultsLocked() {
	e.routeFaults = nil
	e.taskFaults = map[string][]string{}
	e.latency = map[string]Latency{}
	if e.release != nil {
		close(e.release)
	}
	e.release = make(chan struct{})
}

// takeRouteFault consumes one use of the first fault matching route.
// e.mu must be held.
func (e *Emulator) takeRouteFault(route string) *apiError {
	for i, f := range e.routeFaults {
		if f.Route != route && f.Route != "*" {
			continue
		}
		if f.Skip > 0 {
			f.Skip--
			return nil
		}
		f.Count--
		if f.Count <= 0 {
			e.routeFaults = append(e.routeFaults[:i], e.routeFaults[i+1:]...)
		}
		return &apiError{status: f.Status, message: f.Message, errors: f.Errors, style: f.Style}
	}
	return nil
}

// takeTaskFault consumes the next fault for taskType. e.mu must be held.
func (e *Emulator) takeTaskFault(taskType string) (string, bool) {
	q := e.taskFaults[taskType]
	if len(q) == 0 {
		return "", false
	}
	e.taskFaults[taskType] = q[1:]
	return q[0], true
}

// delay applies route's latency. It returns false when ctx ended first.
func (e *Emulator) delay(ctx context.Context, route string) bool {
	e.mu.Lock()
	l, ok := e.latency[route]
	if !ok {
		l, ok = e.latency["*"]
	}
	release := e.release
	e.mu.Unlock()
	if !ok {
		return true
	}
	var timeout <-chan time.Time
	if !l.Hang {
		timer := time.NewTimer(l.Delay)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-release:
		return ctx.Err() == nil
	case <-timeout:
		return true
	}
}
