package emulator

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"better-compute.io/compute/pkg/clock"
)

func TestUPIDRoundTrip(t *testing.T) {
	u := upid{node: "pve1", pid: 0x1a2b, pstart: 0x123456789, startTime: 0x65f00000, typ: "qmclone", id: "9000", user: "root@pam!ci"}
	s := u.String()
	equal(t, s, "UPID:pve1:00001A2B:123456789:65F00000:qmclone:9000:root@pam!ci:", "encoded")
	back, err := parseUPID(s)
	noErr(t, err)
	equal(t, back, u, "decoded")
	for _, bad := range []string{"", "UPID:pve1:1:2:3:qmstart:100:root@pam:", "UPID:pve1:00001A2B:00000001:65F00000:qmstart:100:root@pam", "nope"} {
		if _, err := parseUPID(bad); err == nil {
			t.Errorf("parseUPID(%q) succeeded", bad)
		}
	}
}

func TestUPIDPerTaskType(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startServer(t, Options{Clock: fake})
	x := newTester(t, s)
	x.clone(101, "a")
	tests := []struct {
		typ, method, path string
		form              url.Values
		id                string
	}{
		{typ: "qmclone", method: http.MethodPost, path: "/nodes/pve1/qemu/9000/clone", form: url.Values{"newid": {"102"}}, id: "9000"},
		{typ: "qmconfig", method: http.MethodPost, path: "/nodes/pve1/qemu/101/config", form: url.Values{"cores": {"3"}}, id: "101"},
		{typ: "resize", method: http.MethodPut, path: "/nodes/pve1/qemu/101/resize", form: url.Values{"disk": {"scsi0"}, "size": {"+1G"}}, id: "101"},
		{typ: "qmstart", method: http.MethodPost, path: "/nodes/pve1/qemu/101/status/start", id: "101"},
		{typ: "qmreboot", method: http.MethodPost, path: "/nodes/pve1/qemu/101/status/reboot", id: "101"},
		{typ: "qmreset", method: http.MethodPost, path: "/nodes/pve1/qemu/101/status/reset", id: "101"},
		{typ: "qmshutdown", method: http.MethodPost, path: "/nodes/pve1/qemu/101/status/shutdown", id: "101"},
		{typ: "qmstop", method: http.MethodPost, path: "/nodes/pve1/qemu/101/status/stop", id: "101"},
		{typ: "qmdestroy", method: http.MethodDelete, path: "/nodes/pve1/qemu/101", form: url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}}, id: "101"},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			s := x.do(tc.method, tc.path, tc.form).upid(t)
			if !upidRE.MatchString(s) {
				t.Fatalf("UPID %q has the wrong shape", s)
			}
			u, err := parseUPID(s)
			noErr(t, err)
			equal(t, u.node, "pve1", "node")
			equal(t, u.typ, tc.typ, "type")
			equal(t, u.id, tc.id, "id")
			equal(t, u.user, DefaultTokenID, "user")
			equal(t, u.startTime, int64(1_700_000_000), "starttime")
			st := x.task(s)
			equal(t, st["type"], tc.typ, "status type")
			equal(t, st["id"], tc.id, "status id")
			equal(t, st["upid"], s, "status upid")
			equal(t, st["exitstatus"], "OK", "exit status")
		})
	}
}
