package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"better-compute.io/compute/pkg/clock"
)

// control sends a control API call and decodes the JSON reply.
func control(t *testing.T, s *Server, method, path string, payload any) (int, map[string]any) {
	t.Helper()
	var body io.Reader
	if payload != nil {
		b, err := json.Marshal(payload)
		noErr(t, err)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.BaseURL()+"/_emulator"+path, body)
	noErr(t, err)
	resp, err := pinnedClient(t, s).Do(req)
	noErr(t, err)
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	raw, err := io.ReadAll(resp.Body)
	noErr(t, err)
	if err := json.Unmarshal(raw, &out); err != nil {
		// Lists (GET /vms) are not objects.
		out = map[string]any{"list": json.RawMessage(raw)}
	}
	return resp.StatusCode, out
}

func TestControlAPI(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startServer(t, Options{Clock: fake})
	x := newTester(t, s)
	e := s.Emulator()

	code, out := control(t, s, http.MethodPost, "/vms/seed", SeedSpec{Count: 3, FirstVMID: 200, Tags: "Fleet,b", Description: "seeded", Running: true})
	equal(t, code, 200, "seed")
	equal(t, out["vmids"], []any{float64(200), float64(201), float64(202)}, "seeded ids")
	v, _ := e.VM(201)
	equal(t, v.Tags, []string{"b", "fleet"}, "seeded tags")
	equal(t, v.Status, "running", "seeded status")

	code, _ = control(t, s, http.MethodPost, "/templates", Template{VMID: 9100, Name: "debian", Config: map[string]string{"agent": "0"}})
	equal(t, code, 200, "add template")
	code, out = control(t, s, http.MethodPost, "/templates", Template{VMID: 9100})
	equal(t, code, 400, "duplicate template")
	equal(t, out["error"], "emulator: invalid argument: VM 9100 already exists", "duplicate template error")

	code, _ = control(t, s, http.MethodPost, "/faults/route", RouteFault{Route: RouteNodes, Status: 595, Message: "Connection refused"})
	equal(t, code, 200, "route fault")
	isErrorReply(t, x.do(http.MethodGet, "/nodes", nil), 595, "Connection refused")

	control(t, s, http.MethodPost, "/faults/task", TaskFault{Type: "qmclone", ExitStatus: ExitStorageLockTimeout})
	upid := x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", map[string][]string{"newid": {"101"}}).upid(t)
	equal(t, x.exit(upid), ExitStorageLockTimeout, "task fault via control")

	control(t, s, http.MethodPut, "/vms/201/agent", map[string]any{"running": false})
	isErrorReply(t, x.do(http.MethodGet, "/nodes/pve1/qemu/201/agent/network-get-interfaces", nil), 500, "QEMU guest agent is not running")
	control(t, s, http.MethodPut, "/vms/201/status", map[string]any{"status": "stopped"})
	v, _ = e.VM(201)
	equal(t, v.Status, "stopped", "status via control")
	control(t, s, http.MethodPut, "/vms/202/lock", map[string]any{"lock": "migrate"})
	v, _ = e.VM(202)
	equal(t, v.Lock, "migrate", "lock via control")
	code, _ = control(t, s, http.MethodDelete, "/vms/200", nil)
	equal(t, code, 200, "delete")
	code, out = control(t, s, http.MethodDelete, "/vms/200", nil)
	equal(t, code, 404, "delete twice")
	equal(t, out["error"], "emulator: no such VM: 200", "delete twice error")

	control(t, s, http.MethodPut, "/nodes/pve1", map[string]any{"online": false})
	equal(t, x.do(http.MethodGet, "/nodes/pve1/qemu", nil).status, 595, "node offline via control")
	control(t, s, http.MethodPut, "/nodes/pve1", map[string]any{"online": true, "memory_bytes": 1 << 30})
	equal(t, x.do(http.MethodGet, "/nodes/pve1/status", nil).dataMap(t)["memory"].(map[string]any)["total"], float64(1<<30), "memory via control")

	control(t, s, http.MethodPut, "/task-durations", map[string]int64{"qmstart": 60_000})
	upid = x.do(http.MethodPost, "/nodes/pve1/qemu/201/status/start", nil).upid(t)
	equal(t, x.task(upid)["status"], "running", "start runs for a minute")
	code, out = control(t, s, http.MethodPost, "/clock/advance", map[string]int64{"ms": 60_000})
	equal(t, code, 200, "advance")
	equal(t, out["now"], "2023-11-14T22:14:20Z", "clock after advance")
	equal(t, x.exit(upid), "OK", "start after advance")

	control(t, s, http.MethodPut, "/errors", map[string]bool{"legacy": true})
	equal(t, x.do(http.MethodGet, "/version", nil).dataMap(t)["version"], "8.2.4", "legacy via control")

	control(t, s, http.MethodPost, "/faults/latency", map[string]any{"route": RouteVersion, "hang": true})
	code, _ = control(t, s, http.MethodDelete, "/faults", nil)
	equal(t, code, 200, "clear faults")
	equal(t, x.do(http.MethodGet, "/version", nil).status, 200, "no latency after clear")

	code, out = control(t, s, http.MethodGet, "/calls", nil)
	equal(t, code, 200, "calls")
	equal(t, out[RouteVersion], float64(2), "version calls")
	control(t, s, http.MethodDelete, "/calls", nil)
	equal(t, e.Calls(RouteVersion), 0, "calls reset via control")

	_, out = control(t, s, http.MethodGet, "/vms", nil)
	var vms []VMSnapshot
	noErr(t, json.Unmarshal(out["list"].(json.RawMessage), &vms))
	equal(t, len(vms), 4, "VMs via control (2 templates, 2 seeded)")

	code, _ = control(t, s, http.MethodPost, "/reset", nil)
	equal(t, code, 200, "reset")
	vms = e.VMs()
	mustEqual(t, len(vms), 1, "VMs after reset")
	equal(t, vms[0].VMID, tplID, "only the template is left")
	equal(t, x.do(http.MethodGet, "/version", nil).dataMap(t)["version"], "8.3.0", "error style after reset")
}

func TestControlClockNeedsFakeClock(t *testing.T) {
	s := startServer(t, Options{})
	code, out := control(t, s, http.MethodPost, "/clock/advance", map[string]int64{"ms": 1})
	equal(t, code, 409, "advance a real clock")
	equal(t, out["error"], "emulator: conflict: the clock is not a FakeClock", "error")
}
