package emulator

import (
	"container/heap"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// Action commands the emulator runs.
const (
	cmdCreate     = "create_server"
	cmdStart      = "start_server"
	cmdStop       = "stop_server"
	cmdShutdown   = "shutdown_server"
	cmdReboot     = "reboot_server"
	cmdReset      = "reset_server"
	cmdRebuild    = "rebuild_server"
	cmdDelete     = "delete_server"
	cmdChangeType = "change_server_type"
)

// Action statuses.
const (
	actionRunning = "running"
	actionSuccess = "success"
	actionError   = "error"
)

// action is one asynchronous server operation.
type action struct {
	id       int64
	command  string
	serverID int64
	started  time.Time
	deadline time.Time // when it completes; also its "finished" time
	status   string
	// fault, if set, is the error the action ends with.
	fault *actionFault
	// afterCreate marks the start_server that follows create_server; it
	// fails if the create failed.
	afterCreate bool
	// prevStatus is the server status restored if the action fails.
	prevStatus string
	// prevImage is the image restored if a rebuild fails.
	prevImage *image
	// newType and upgradeDisk are what a change_server_type applies.
	newType     *serverType
	upgradeDisk bool
	// networkID is the network an attach_to_network joins (0: none); it
	// is the action's second resource.
	networkID int64
}

// toSchema renders a as the API does at now.
func (a *action) toSchema(now time.Time) schema.Action {
	s := schema.Action{
		ID: a.id, Command: a.command, Status: a.status, Started: a.started,
		Resources: []schema.ActionResourceReference{{ID: a.serverID, Type: "server"}},
	}
	if a.networkID != 0 {
		s.Resources = append(s.Resources, schema.ActionResourceReference{ID: a.networkID, Type: "network"})
	}
	switch a.status {
	case actionRunning:
		total := a.deadline.Sub(a.started)
		s.Progress = min(99, max(0, int(100*now.Sub(a.started)/max(total, 1))))
	case actionSuccess:
		s.Progress = 100
	}
	if a.status != actionRunning {
		finished := a.deadline
		s.Finished = &finished
	}
	if a.status == actionError {
		s.Error = &schema.ActionError{Code: a.fault.code, Message: a.fault.message}
	}
	return s
}

// actionQueue is a min-heap of running actions by deadline, then id.
type actionQueue []*action

// Len implements heap.Interface.
func (q actionQueue) Len() int { return len(q) }

// Less implements heap.Interface.
func (q actionQueue) Less(i, j int) bool {
	if !q[i].deadline.Equal(q[j].deadline) {
		return q[i].deadline.Before(q[j].deadline)
	}
	return q[i].id < q[j].id
}

// Swap implements heap.Interface.
func (q actionQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
}

// Push implements heap.Interface.
func (q *actionQueue) Push(x any) {
	*q = append(*q, x.(*action))
}

// Pop implements heap.Interface.
func (q *actionQueue) Pop() any {
	old := *q
	a := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return a
}

// startActionLocked starts command on srv: the server is locked until the
// action completes, and if the command was armed by FailNextAction the
// action will fail. Callers hold e.mu.
func (e *Emulator) startActionLocked(command string, srv *server, now time.Time) *action {
	st := e.st
	a := &action{
		id: st.nextActionID, command: command, serverID: srv.id,
		started: now, deadline: now.Add(e.actionDuration), status: actionRunning,
		fault: e.faults.nextActionFault(command), prevStatus: srv.status, prevImage: srv.img,
	}
	st.nextActionID++
	st.actions[a.id] = a
	heap.Push(&st.pending, a)
	srv.actions = append(srv.actions, a)
	srv.running++
	return a
}

// settleLocked completes, in order, every action whose time has come.
// Callers hold e.mu; every read of state settles first.
func (e *Emulator) settleLocked(now time.Time) {
	st := e.st
	for len(st.pending) > 0 && !st.pending[0].deadline.After(now) {
		e.completeLocked(heap.Pop(&st.pending).(*action))
	}
}

// completeLocked ends a and applies its effect to its server, if the server
// still exists. A failed action puts the server back in the status it had
// before (for create_server and the start_server after it: off).
func (e *Emulator) completeLocked(a *action) {
	srv := e.st.servers[a.serverID]
	if a.fault == nil && a.afterCreate && srv != nil && srv.createFailure != nil {
		a.fault = srv.createFailure
	}
	a.status = actionSuccess
	if a.fault != nil {
		a.status = actionError
	}
	if srv == nil {
		return
	}
	srv.running--
	if a.fault != nil {
		srv.status, srv.img = a.prevStatus, a.prevImage
		switch a.command {
		case cmdCreate:
			srv.createFailure = a.fault
		case cmdAttachToNetwork:
			srv.detachFailedLocked(a)
		}
		return
	}
	switch a.command {
	case cmdCreate:
		if !srv.startAfterCreate {
			srv.status = statusOff
		}
	case cmdStart, cmdReboot, cmdReset:
		srv.status = statusRunning
	case cmdRebuild:
		srv.status = statusRunning
		if m := e.sshMachine(srv); m != nil {
			_ = m.ChangeHostKey() // a new disk has a new host key
		}
	case cmdStop, cmdShutdown:
		srv.status = statusOff
	case cmdDelete:
		e.removeServerLocked(srv)
	case cmdChangeType:
		e.applyChangeTypeLocked(srv, a)
	}
}
