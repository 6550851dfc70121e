package emulator

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"better-compute.io/compute/pkg/clock"
)

// guests is GET /cluster/resources?type=vm by VMID.
func (x *tester) guests() map[int]map[string]any {
	x.t.Helper()
	out := map[int]map[string]any{}
	for _, r := range x.do(http.MethodGet, "/cluster/resources", url.Values{"type": {"vm"}}).data().([]any) {
		g := r.(map[string]any)
		out[int(g["vmid"].(float64))] = g
	}
	return out
}

// The cluster list serves name, status and the template flag as pvestatd
// last saw them, lock and tags current: a reused VMID shows its old
// occupant, a new VM status "unknown" and no name, until the next round.
func TestStaleClusterResources(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	other := Template{VMID: 9001, Name: "debian-12", Tags: "deb"}
	s := startServer(t, Options{Clock: fake, StatsInterval: DefaultStatsInterval, Templates: []Template{testTemplate(), other}})
	x := newTester(t, s)
	e := s.Emulator()

	noErr(t, e.DeleteVM(tplID)) // the template goes; a clone takes its VMID at once
	form := url.Values{"newid": {strconv.Itoa(tplID)}, "name": {"web-1"}, "full": {"1"}}
	equal(t, x.exit(x.do(http.MethodPost, "/nodes/pve1/qemu/9001/clone", form).upid(t)), "OK", "clone into the reused VMID")
	x.clone(200, "web-2")
	noErr(t, e.SetVMLock(200, "backup"))

	g := x.guests()
	equal(t, g[tplID]["name"], "ubuntu-24-04", "reused VMID: the old occupant's name")
	equal(t, g[tplID]["template"], float64(1), "reused VMID: the old occupant's template flag")
	equal(t, g[tplID]["tags"], "deb", "reused VMID: the config's tags")
	equal(t, g[200]["status"], "unknown", "new VM: status")
	_, named := g[200]["name"]
	equal(t, named, false, "new VM: no name")
	equal(t, g[200]["lock"], "backup", "new VM: the config's lock")

	fake.Advance(DefaultStatsInterval)
	g = x.guests()
	equal(t, []any{g[tplID]["name"], g[tplID]["template"], g[200]["name"], g[200]["status"]},
		[]any{"web-1", float64(0), "web-2", "stopped"}, "after a pvestatd round")

	noErr(t, e.SetVMStatus(200, StatusRunning))
	equal(t, x.guests()[200]["status"], "stopped", "status before the next round")
	code, _ := control(t, s, http.MethodPost, "/stats/refresh", nil)
	equal(t, code, 200, "refresh")
	equal(t, x.guests()[200]["status"], "running", "status after a refresh")

	code, _ = control(t, s, http.MethodPut, "/stats", map[string]int64{"interval_ms": 0})
	equal(t, code, 200, "stats interval 0")
	noErr(t, e.SetVMStatus(200, StatusStopped))
	equal(t, x.guests()[200]["status"], "stopped", "interval 0: current")
	code, _ = control(t, s, http.MethodPut, "/stats", map[string]int64{"interval_ms": -1})
	equal(t, code, 400, "negative interval")
}
