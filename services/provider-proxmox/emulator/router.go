package emulator

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// apiPrefix is where the API lives.
const apiPrefix = "/api2/json"

// call is one API request being handled.
type call struct {
	r    *http.Request
	p    params
	user string // the token ID, as PVE puts it in UPIDs
	now  time.Time
	node *Node // set for routes with {node}
	vmid int   // set for routes with {vmid}
}

// handler serves one route with e.mu held.
type handler func(c *call) (any, *apiError)

// handle registers h for route, wrapped in the steps every API call takes:
// count, read parameters, latency, authentication, parameter errors, then
// under the lock: due tasks, route faults, node and VMID checks, the
// handler.
func (e *Emulator) handle(route string, h handler) {
	method, path, _ := strings.Cut(route, " ")
	e.mux.HandleFunc(method+" "+apiPrefix+path, func(w http.ResponseWriter, r *http.Request) {
		e.calls.add(route)
		// The body is read first so that the server notices a client
		// going away (and cancels the context) during injected latency.
		p, perr := readParams(r)
		if !e.delay(r.Context(), route) {
			dropConnection(w)
			return
		}
		user, aerr := e.authenticate(r)
		if aerr != nil {
			e.reply(w, r, nil, aerr)
			return
		}
		if perr != nil {
			e.reply(w, r, nil, &apiError{status: http.StatusBadRequest, message: perr.Error()})
			return
		}
		c := &call{r: r, p: p, user: user}
		e.mu.Lock()
		data, aerr := e.dispatch(route, c, h)
		e.mu.Unlock()
		e.reply(w, r, data, aerr)
	})
}

// dispatch runs the locked part of a call. e.mu must be held.
func (e *Emulator) dispatch(route string, c *call, h handler) (any, *apiError) {
	e.advanceLocked()
	if f := e.takeRouteFault(route); f != nil {
		return nil, f
	}
	c.now = e.clock.Now()
	if strings.Contains(route, "{node}") {
		n, err := e.reachableNode(c.r.PathValue("node"))
		if err != nil {
			return nil, err
		}
		c.node = n
	}
	if strings.Contains(route, "{vmid}") {
		id, err := parseVMID("vmid", c.r.PathValue("vmid"))
		if err != nil {
			return nil, err
		}
		c.vmid = id
	}
	return h(c)
}

// reply writes data or aerr in the current error style.
func (e *Emulator) reply(w http.ResponseWriter, r *http.Request, data any, aerr *apiError) {
	if aerr == nil {
		writeData(w, data)
		return
	}
	e.mu.Lock()
	legacy := e.legacy
	e.mu.Unlock()
	writeError(w, r, aerr, legacy)
}

// notImplemented is PVE's reply to a path it has no method for.
func (e *Emulator) notImplemented(w http.ResponseWriter, r *http.Request) {
	if _, aerr := e.authenticate(r); aerr != nil {
		e.reply(w, r, nil, aerr)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, apiPrefix)
	e.reply(w, r, nil, &apiError{status: http.StatusNotImplemented,
		message: fmt.Sprintf("Method '%s %s' not implemented", r.Method, path)})
}

// reachableNode returns the named node, or PVE's errors for a node that is
// not in the cluster (Guess: the proxy's 500 hostname lookup failure) or is
// offline (595, as pveproxy reports a node it cannot reach).
func (e *Emulator) reachableNode(name string) (*Node, *apiError) {
	n, ok := e.nodes[name]
	if !ok {
		return nil, errInternal("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", name, name)
	}
	if n.Offline {
		return nil, &apiError{status: 595, message: "No route to host"}
	}
	return n, nil
}

// parseVMID validates a pve-vmid parameter.
func parseVMID(param, s string) (int, *apiError) {
	id, err := strconv.Atoi(s)
	if err != nil {
		return 0, errParam(param, fmt.Sprintf("type check ('integer') failed - got '%s'", s))
	}
	if id < 100 {
		return 0, errParam(param, "value must have a minimum value of 100")
	}
	if id > 999999999 {
		return 0, errParam(param, "value must have a maximum value of 999999999")
	}
	return id, nil
}

// vmOn returns the call's VM, or PVE's missing-config error when it does
// not exist on the call's node.
func (e *Emulator) vmOn(c *call) (*vm, *apiError) {
	v, ok := e.vms[c.vmid]
	if !ok || v.node != c.node.Name {
		return nil, errMissingConfig(c.node.Name, c.vmid)
	}
	return v, nil
}

// dropConnection ends a call without a reply, as a vanished server would:
// returning from the handler would make net/http send an empty 200, which
// a client that has not quite given up yet could still read.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}
