package emulator

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestRouteFaults(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	e := s.Emulator()
	x.clone(101, "web-1")

	e.InjectRouteFault(RouteFault{Route: RouteStart, Count: 2, Status: 403, Message: "Permission check failed (/vms/101, VM.PowerMgmt)"})
	for range 2 {
		r := x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/start", nil)
		isErrorReply(t, r, 403, "Permission check failed (/vms/101, VM.PowerMgmt)")
	}
	equal(t, x.exit(x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/start", nil).upid(t)), "OK", "third start")

	e.InjectRouteFault(RouteFault{Route: "*", Status: 595, Message: "Connection timed out"})
	isErrorReply(t, x.do(http.MethodGet, "/cluster/resources", nil), 595, "Connection timed out")
	equal(t, x.do(http.MethodGet, "/cluster/resources", nil).status, 200, "after the fault")

	e.InjectRouteFault(RouteFault{Route: RouteNextID, Status: 400, Errors: map[string]string{"vmid": "VM 100 already exists"}, Message: "Parameter verification failed."})
	r := x.do(http.MethodGet, "/cluster/nextid", nil)
	equal(t, r.body["errors"], map[string]any{"vmid": "VM 100 already exists"}, "injected 400 errors")
}

func TestTaskFaults(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	e := s.Emulator()
	x.clone(101, "web-1")

	e.WarnNextTask("qmstart", 1)
	st := x.task(x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/start", nil).upid(t))
	equal(t, st["exitstatus"], "WARNINGS: 1", "warnings exit")
	v, _ := e.VM(101)
	equal(t, v.Status, "running", "warnings still apply the effect")

	e.InjectTaskFault(TaskFault{Type: "qmstop", ExitStatus: "VM quit/powerdown failed - got timeout", Count: 2})
	for range 2 {
		equal(t, x.exit(x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/stop", nil).upid(t)), "VM quit/powerdown failed - got timeout", "failed stop")
	}
	v, _ = e.VM(101)
	equal(t, v.Status, "running", "failed stop has no effect")
	equal(t, x.exit(x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/stop", nil).upid(t)), "OK", "third stop")
}

func TestLatencyHonoursContext(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	e := s.Emulator()

	e.SetLatency(Latency{Route: RouteVersion, Delay: 150 * time.Millisecond})
	start := time.Now()
	equal(t, x.do(http.MethodGet, "/version", nil).status, 200, "delayed call")
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("delayed call took %v", d)
	}

	e.SetLatency(Latency{Route: RouteVersion, Hang: true})
	cx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(cx, http.MethodGet, s.URL()+"/version", nil)
	req.Header.Set("Authorization", x.auth)
	resp, err := x.client.Do(req) //nolint:bodyclose // must fail: no body
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call: err = %v, want deadline exceeded (resp %+v)", err, resp)
	}

	// A hung call is released by ClearFaults.
	e.SetLatency(Latency{Route: RouteConfigPost, Hang: true})
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/nodes/pve1/qemu/9000/config", nil)
		req.Header.Set("Authorization", x.auth)
		resp, err := x.client.Do(req)
		if err != nil {
			done <- -1
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case code := <-done:
		t.Fatalf("hung call answered %d", code)
	case <-time.After(100 * time.Millisecond):
	}
	e.ClearFaults()
	select {
	case code := <-done:
		equal(t, code, 200, "released call")
	case <-time.After(5 * time.Second):
		t.Fatal("hung call not released")
	}
	equal(t, e.Calls(RouteVersion), 2, "hung calls are counted")
}

func TestGuestAgent(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	e := s.Emulator()
	x.clone(101, "web-1")
	path := "/nodes/pve1/qemu/101/agent/network-get-interfaces"

	isErrorReply(t, x.do(http.MethodGet, path, nil), 500, "VM 101 is not running")
	noErr(t, e.SetVMStatus(101, StatusRunning))
	res := x.do(http.MethodGet, path, nil).dataMap(t)["result"].([]any)
	mustEqual(t, len(res), 2, "interfaces")
	eth0 := res[1].(map[string]any)
	equal(t, eth0["ip-addresses"], []any{map[string]any{"ip-address": "10.0.0.101", "ip-address-type": "ipv4", "prefix": float64(16)}}, "eth0 addresses")

	noErr(t, e.SetAgentInterfaces(101, []AgentInterface{{Name: "ens18", MAC: "bc:24:11:aa:bb:cc",
		Addresses: []AgentAddress{{IP: "192.0.2.10", Type: "ipv4", Prefix: 24}}}}))
	res = x.do(http.MethodGet, path, nil).dataMap(t)["result"].([]any)
	equal(t, res[0].(map[string]any)["name"], "ens18", "custom interface")

	noErr(t, e.SetAgentRunning(101, false))
	isErrorReply(t, x.do(http.MethodGet, path, nil), 500, "QEMU guest agent is not running")

	x.do(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"delete": {"agent"}})
	isErrorReply(t, x.do(http.MethodGet, path, nil), 500, "No QEMU guest agent configured")

	// Static ipconfig0 feeds the default interfaces.
	noErr(t, e.SetAgentRunning(101, true))
	noErr(t, e.SetAgentInterfaces(101, nil))
	x.do(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"agent": {"enabled=1,fstrim_cloned_disks=1"}, "ipconfig0": {"ip=192.0.2.7/24,gw=192.0.2.1"}})
	res = x.do(http.MethodGet, path, nil).dataMap(t)["result"].([]any)
	equal(t, res[1].(map[string]any)["ip-addresses"].([]any)[0].(map[string]any)["ip-address"], "192.0.2.7", "static address")
}

func TestOutOfBand(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	e := s.Emulator()
	x.clone(101, "web-1")

	noErr(t, e.SetVMLock(101, "backup"))
	equal(t, x.exit(x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/start", nil).upid(t)), "VM is locked (backup)", "start while locked")
	equal(t, x.exit(x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/start", url.Values{"skiplock": {"1"}}).upid(t)), "OK", "start with skiplock")
	noErr(t, e.SetVMLock(101, ""))

	noErr(t, e.SetVMStatus(101, StatusStopped))
	equal(t, x.do(http.MethodGet, "/nodes/pve1/qemu/101/status/current", nil).dataMap(t)["status"], "stopped", "stopped out of band")

	noErr(t, e.DeleteVM(101))
	isErrorReply(t, x.do(http.MethodGet, "/nodes/pve1/qemu/101/config", nil), 500, "Configuration file 'nodes/pve1/qemu-server/101.conf' does not exist")
	if err := e.DeleteVM(101); !errors.Is(err, ErrNoSuchVM) {
		t.Errorf("DeleteVM twice: %v", err)
	}
	if err := e.SetVMStatus(9000, "paused"); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetVMStatus(paused): %v", err)
	}
	if err := e.SetNodeOnline("nope", true); !errors.Is(err, ErrNoSuchNode) {
		t.Errorf("SetNodeOnline(nope): %v", err)
	}
}

func TestCallCounters(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	e := s.Emulator()
	x.clone(101, "a")
	x.clone(102, "b")
	x.do(http.MethodGet, "/cluster/resources", url.Values{"type": {"vm"}})
	x.auth = "PVEAPIToken=bad@pve!x=y"
	x.do(http.MethodGet, "/cluster/resources", nil)

	equal(t, e.Calls(RouteClone), 2, "clones")
	equal(t, e.Calls(RouteTaskStatus), 2, "task polls")
	equal(t, e.Calls(RouteClusterResources), 2, "resources (unauthenticated calls count too)")
	equal(t, e.CallCounts(), map[string]int{
		"POST /nodes/{node}/qemu/{vmid}/clone":  2,
		"GET /nodes/{node}/tasks/{upid}/status": 2,
		"GET /cluster/resources":                2,
	}, "all counts")
	e.ResetCalls()
	equal(t, e.Calls(RouteClone), 0, "after reset")
	equal(t, len(e.CallCounts()), 0, "no counts after reset")
}
