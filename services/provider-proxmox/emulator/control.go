package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"better-compute.io/compute/pkg/clock"
)

// Control API (JSON, no authentication), for driving an emulator in
// another process. Every reply is JSON; errors are {"error": "…"} with 400
// (bad input), 404 (no such VM/node) or 409 (the clock is not a clock.Fake).
//
//	POST   /_emulator/reset                      Reset
//	GET    /_emulator/calls                      CallCounts
//	DELETE /_emulator/calls                      ResetCalls
//	POST   /_emulator/faults/route   RouteFault  InjectRouteFault
//	POST   /_emulator/faults/task    TaskFault   InjectTaskFault
//	POST   /_emulator/faults/latency {"route","delay_ms","hang"}  SetLatency
//	DELETE /_emulator/faults                     ClearFaults
//	GET    /_emulator/vms                        VMs
//	POST   /_emulator/vms/seed       SeedSpec    SeedVMs -> {"vmids":[…]}
//	POST   /_emulator/templates      Template    AddTemplate
//	PUT    /_emulator/vms/{vmid}/agent  {"running":bool,"interfaces":[…]?}
//	PUT    /_emulator/vms/{vmid}/status {"status":"running"|"stopped"}
//	PUT    /_emulator/vms/{vmid}/lock   {"lock":"backup"|""}
//	DELETE /_emulator/vms/{vmid}                 DeleteVM
//	PUT    /_emulator/nodes/{node}   {"online":bool?,"memory_bytes":int?}
//	PUT    /_emulator/task-durations {"qmclone":ms,…}  SetTaskDuration
//	PUT    /_emulator/errors         {"legacy":bool}   SetLegacyErrors
//	PUT    /_emulator/stats          {"interval_ms":n} SetStatsInterval
//	POST   /_emulator/stats/refresh                    RefreshStats
//	POST   /_emulator/clock/advance  {"ms":n}    clock.Fake.Advance
const controlPrefix = "/_emulator"

// controlHandler handles one control call, returning the reply or an error.
type controlHandler func(r *http.Request) (any, error)

// errConflict marks a control call that cannot apply to this emulator.
var errConflict = errors.New("emulator: conflict")

// registerControl wires the control API.
func (e *Emulator) registerControl() {
	routes := map[string]controlHandler{
		"POST /reset":            e.ctlReset,
		"GET /calls":             func(*http.Request) (any, error) { return e.CallCounts(), nil },
		"DELETE /calls":          e.ctlResetCalls,
		"POST /faults/route":     e.ctlRouteFault,
		"POST /faults/task":      e.ctlTaskFault,
		"POST /faults/latency":   e.ctlLatency,
		"DELETE /faults":         e.ctlClearFaults,
		"GET /vms":               func(*http.Request) (any, error) { return e.VMs(), nil },
		"POST /vms/seed":         e.ctlSeed,
		"POST /templates":        e.ctlTemplate,
		"PUT /vms/{vmid}/agent":  e.ctlAgent,
		"PUT /vms/{vmid}/status": e.ctlStatus,
		"PUT /vms/{vmid}/lock":   e.ctlLock,
		"DELETE /vms/{vmid}":     e.ctlDelete,
		"PUT /nodes/{node}":      e.ctlNode,
		"PUT /task-durations":    e.ctlDurations,
		"PUT /errors":            e.ctlErrors,
		"PUT /stats":             e.ctlStats,
		"POST /stats/refresh":    e.ctlRefreshStats,
		"POST /clock/advance":    e.ctlAdvance,
	}
	for pattern, h := range routes {
		method, path, _ := strings.Cut(pattern, " ")
		e.mux.HandleFunc(method+" "+controlPrefix+path, serveControl(h))
	}
}

// serveControl adapts a controlHandler.
func serveControl(h controlHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, err := h(r)
		status := http.StatusOK
		switch {
		case errors.Is(err, ErrNoSuchVM), errors.Is(err, ErrNoSuchNode):
			status = http.StatusNotFound
		case errors.Is(err, errConflict):
			status = http.StatusConflict
		case err != nil:
			status = http.StatusBadRequest
		}
		if err != nil {
			out = map[string]string{"error": err.Error()}
		}
		if out == nil {
			out = map[string]bool{"ok": true}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(out)
	}
}

// decode reads a JSON body into v (an empty body leaves v alone).
func decode(r *http.Request, v any) error {
	err := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes)).Decode(v)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// pathVMID reads the {vmid} path value.
func pathVMID(r *http.Request) (int, error) {
	id, err := strconv.Atoi(r.PathValue("vmid"))
	if err != nil {
		return 0, fmt.Errorf("%w: vmid %q", ErrInvalid, r.PathValue("vmid"))
	}
	return id, nil
}

// ctlReset serves POST /_emulator/reset.
func (e *Emulator) ctlReset(*http.Request) (any, error) {
	e.Reset()
	return nil, nil
}

// ctlResetCalls serves DELETE /_emulator/calls.
func (e *Emulator) ctlResetCalls(*http.Request) (any, error) {
	e.ResetCalls()
	return nil, nil
}

// ctlClearFaults serves DELETE /_emulator/faults.
func (e *Emulator) ctlClearFaults(*http.Request) (any, error) {
	e.ClearFaults()
	return nil, nil
}

// ctlRouteFault serves POST /_emulator/faults/route.
func (e *Emulator) ctlRouteFault(r *http.Request) (any, error) {
	var f RouteFault
	if err := decode(r, &f); err != nil {
		return nil, err
	}
	if f.Route == "" {
		return nil, fmt.Errorf("%w: route is required", ErrInvalid)
	}
	e.InjectRouteFault(f)
	return nil, nil
}

// ctlTaskFault serves POST /_emulator/faults/task.
func (e *Emulator) ctlTaskFault(r *http.Request) (any, error) {
	var f TaskFault
	if err := decode(r, &f); err != nil {
		return nil, err
	}
	if f.Type == "" || f.ExitStatus == "" {
		return nil, fmt.Errorf("%w: type and exitstatus are required", ErrInvalid)
	}
	e.InjectTaskFault(f)
	return nil, nil
}

// ctlLatency serves POST /_emulator/faults/latency.
func (e *Emulator) ctlLatency(r *http.Request) (any, error) {
	var body struct {
		Route   string `json:"route"`
		DelayMS int64  `json:"delay_ms"`
		Hang    bool   `json:"hang"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	e.SetLatency(Latency{Route: body.Route, Delay: time.Duration(body.DelayMS) * time.Millisecond, Hang: body.Hang})
	return nil, nil
}

// ctlSeed serves POST /_emulator/vms/seed.
func (e *Emulator) ctlSeed(r *http.Request) (any, error) {
	var spec SeedSpec
	if err := decode(r, &spec); err != nil {
		return nil, err
	}
	ids, err := e.SeedVMs(spec)
	if err != nil {
		return nil, err
	}
	return map[string][]int{"vmids": ids}, nil
}

// ctlTemplate serves POST /_emulator/templates.
func (e *Emulator) ctlTemplate(r *http.Request) (any, error) {
	var t Template
	if err := decode(r, &t); err != nil {
		return nil, err
	}
	return nil, e.AddTemplate(t)
}

// ctlAgent serves PUT /_emulator/vms/{vmid}/agent.
func (e *Emulator) ctlAgent(r *http.Request) (any, error) {
	id, err := pathVMID(r)
	if err != nil {
		return nil, err
	}
	var body struct {
		Running    *bool            `json:"running"`
		Interfaces []AgentInterface `json:"interfaces"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if body.Running != nil {
		if err := e.SetAgentRunning(id, *body.Running); err != nil {
			return nil, err
		}
	}
	if body.Interfaces != nil {
		return nil, e.SetAgentInterfaces(id, body.Interfaces)
	}
	return nil, nil
}

// ctlStatus serves PUT /_emulator/vms/{vmid}/status.
func (e *Emulator) ctlStatus(r *http.Request) (any, error) {
	id, err := pathVMID(r)
	if err != nil {
		return nil, err
	}
	var body struct {
		Status string `json:"status"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	return nil, e.SetVMStatus(id, body.Status)
}

// ctlLock serves PUT /_emulator/vms/{vmid}/lock.
func (e *Emulator) ctlLock(r *http.Request) (any, error) {
	id, err := pathVMID(r)
	if err != nil {
		return nil, err
	}
	var body struct {
		Lock string `json:"lock"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	return nil, e.SetVMLock(id, body.Lock)
}

// ctlDelete serves DELETE /_emulator/vms/{vmid}.
func (e *Emulator) ctlDelete(r *http.Request) (any, error) {
	id, err := pathVMID(r)
	if err != nil {
		return nil, err
	}
	return nil, e.DeleteVM(id)
}

// ctlNode serves PUT /_emulator/nodes/{node}.
func (e *Emulator) ctlNode(r *http.Request) (any, error) {
	name := r.PathValue("node")
	var body struct {
		Online      *bool  `json:"online"`
		MemoryBytes *int64 `json:"memory_bytes"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if body.Online != nil {
		if err := e.SetNodeOnline(name, *body.Online); err != nil {
			return nil, err
		}
	}
	if body.MemoryBytes != nil {
		return nil, e.SetNodeMemory(name, *body.MemoryBytes)
	}
	return nil, nil
}

// ctlDurations serves PUT /_emulator/task-durations.
func (e *Emulator) ctlDurations(r *http.Request) (any, error) {
	var body map[string]int64
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	for typ, ms := range body {
		e.SetTaskDuration(typ, time.Duration(ms)*time.Millisecond)
	}
	return nil, nil
}

// ctlErrors serves PUT /_emulator/errors.
func (e *Emulator) ctlErrors(r *http.Request) (any, error) {
	var body struct {
		Legacy bool `json:"legacy"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	e.SetLegacyErrors(body.Legacy)
	return nil, nil
}

// ctlStats serves PUT /_emulator/stats.
func (e *Emulator) ctlStats(r *http.Request) (any, error) {
	var body struct {
		IntervalMS *int64 `json:"interval_ms"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if body.IntervalMS == nil || *body.IntervalMS < 0 {
		return nil, fmt.Errorf("%w: interval_ms (>= 0) is required", ErrInvalid)
	}
	e.SetStatsInterval(time.Duration(*body.IntervalMS) * time.Millisecond)
	return nil, nil
}

// ctlRefreshStats serves POST /_emulator/stats/refresh.
func (e *Emulator) ctlRefreshStats(*http.Request) (any, error) {
	e.RefreshStats()
	return nil, nil
}

// ctlAdvance serves POST /_emulator/clock/advance.
func (e *Emulator) ctlAdvance(r *http.Request) (any, error) {
	fc, ok := e.clock.(*clock.Fake)
	if !ok {
		return nil, fmt.Errorf("%w: the clock is not a FakeClock", errConflict)
	}
	var body struct {
		MS int64 `json:"ms"`
	}
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	fc.Advance(time.Duration(body.MS) * time.Millisecond)
	return map[string]string{"now": fc.Now().UTC().Format(time.RFC3339Nano)}, nil
}
