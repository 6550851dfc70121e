package emulator

import (
	"net/http"
	"sync"
	"time"
)

// injectedError is an error reply a fault makes a route give.
type injectedError struct {
	status  int
	code    string
	message string
}

// countedError is an injectedError for the next n calls.
type countedError struct {
	injectedError
	n int
}

// actionFault is the error the next action of a command ends with.
type actionFault struct {
	code    string
	message string
}

// faults holds the armed faults, keyed by route (see Emulator.Calls) or,
// for actions, by command. It is safe for concurrent use.
type faults struct {
	mu      sync.Mutex
	fail    map[string][]countedError
	drop    map[string]int
	hang    map[string]int
	latency map[string]time.Duration
	action  map[string][]actionFault
}

// newFaults returns a fault table with nothing armed.
func newFaults() *faults {
	f := &faults{}
	f.clear()
	return f
}

// clear disarms every fault.
func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = map[string][]countedError{}
	f.drop = map[string]int{}
	f.hang = map[string]int{}
	f.latency = map[string]time.Duration{}
	f.action = map[string][]actionFault{}
}

// delay tells how a call of route must wait before being served: hang
// (until the request ends; consumes one armed hang) or a fixed latency.
func (f *faults) delay(route string) (hang bool, latency time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hang[route] > 0 {
		f.hang[route]--
		return true, 0
	}
	return false, f.latency[route]
}

// outcome tells whether a call of route must fail with an injected error,
// or be served and its response dropped. An injected failure wins over a
// drop; each consumes one armed call.
func (f *faults) outcome(route string) (fail *injectedError, drop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.fail[route]; len(q) > 0 {
		e := q[0].injectedError
		if q[0].n--; q[0].n == 0 {
			f.fail[route] = q[1:]
		}
		return &e, false
	}
	if f.drop[route] > 0 {
		f.drop[route]--
		return nil, true
	}
	return nil, false
}

// nextActionFault pops the error armed for the next action of command.
func (f *faults) nextActionFault(command string) *actionFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.action[command]
	if len(q) == 0 {
		return nil
	}
	f.action[command] = q[1:]
	return &q[0]
}

// FailNext makes the next n calls of route (a key as in Calls, e.g.
// "POST /servers") answer status with the error code and message, without
// touching state. A status outside 400..599 is sent as 500. Arming again
// queues behind the calls already armed.
func (e *Emulator) FailNext(route string, n int, status int, code, message string) {
	if n <= 0 {
		return
	}
	if message == "" {
		message = "injected fault"
	}
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	e.faults.fail[route] = append(e.faults.fail[route], countedError{
		injectedError: injectedError{status: status, code: code, message: message}, n: n,
	})
}

// DropResponseNext makes the next n calls of route run normally (state
// changes are committed) and then close the connection without replying,
// as when a reply is lost in the network. Meant for POSTs: Go's
// http.Transport may silently resend an idempotent request (GET) whose
// reused connection closed, and the resent call is then answered.
func (e *Emulator) DropResponseNext(route string, n int) {
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	e.faults.drop[route] += max(n, 0)
}

// SetLatency delays every call of route by d (real time) before it is
// served; d <= 0 removes the delay. A call whose client gives up during the
// delay is not served at all.
func (e *Emulator) SetLatency(route string, d time.Duration) {
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	if d <= 0 {
		delete(e.faults.latency, route)
		return
	}
	e.faults.latency[route] = d
}

// HangNext makes the next n calls of route never answer: they end, unserved,
// when the request's context ends (client timeout or disconnect, or
// Server.Close). Note that httptest.Server.Close waits for them.
func (e *Emulator) HangNext(route string, n int) {
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	e.faults.hang[route] += max(n, 0)
}

// FailNextAction makes the next action with command (e.g. "create_server",
// "start_server", "delete_server") end with status error and the given code
// and message instead of success. Arming again queues.
func (e *Emulator) FailNextAction(command, code, message string) {
	if message == "" {
		message = "injected action failure"
	}
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	e.faults.action[command] = append(e.faults.action[command], actionFault{code: code, message: message})
}

// reply renders an injected error as an API error reply; a status outside
// 400..599 becomes 500.
func (ie *injectedError) reply() reply {
	status := ie.status
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	return errorReply(status, ie.code, ie.message, nil)
}
