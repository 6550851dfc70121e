package emulator

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"better-compute.io/compute/pkg/clock"
)

func TestPowerSemantics(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	x.clone(101, "web-1")
	base := "/nodes/pve1/qemu/101/status/"

	// Stopping a stopped VM is fine.
	equal(t, x.exit(x.do(http.MethodPost, base+"stop", nil).upid(t)), "OK", "stop stopped")

	// Reset and reboot of a stopped VM are synchronous 500s.
	isErrorReply(t, x.do(http.MethodPost, base+"reset", nil), 500, "VM 101 not running")
	isErrorReply(t, x.do(http.MethodPost, base+"reboot", nil), 500, "VM 101 not running")

	equal(t, x.exit(x.do(http.MethodPost, base+"start", nil).upid(t)), "OK", "start")
	cur := x.do(http.MethodGet, base+"current", nil).dataMap(t)
	equal(t, cur["status"], "running", "status after start")
	equal(t, cur["qmpstatus"], "running", "qmpstatus")

	// Starting a running VM fails in the task.
	equal(t, x.exit(x.do(http.MethodPost, base+"start", nil).upid(t)), "VM 101 already running", "start running")
	equal(t, x.exit(x.do(http.MethodPost, base+"reboot", nil).upid(t)), "OK", "reboot")

	// Destroying a running VM is refused synchronously.
	isErrorReply(t, x.do(http.MethodDelete, "/nodes/pve1/qemu/101", nil), 500, "VM 101 is running - destroy failed")

	equal(t, x.exit(x.do(http.MethodPost, base+"shutdown", nil).upid(t)), "OK", "shutdown")
	equal(t, x.do(http.MethodGet, base+"current", nil).dataMap(t)["status"], "stopped", "status after shutdown")

	upid := x.do(http.MethodDelete, "/nodes/pve1/qemu/101", url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}}).upid(t)
	equal(t, x.exit(upid), "OK", "destroy")
	_, exists := s.Emulator().VM(101)
	equal(t, exists, false, "VM exists after destroy")
	isErrorReply(t, x.do(http.MethodGet, base+"current", nil), 500, "Configuration file 'nodes/pve1/qemu-server/101.conf' does not exist")

	// Templates cannot start.
	equal(t, x.exit(x.do(http.MethodPost, "/nodes/pve1/qemu/9000/status/start", nil).upid(t)), "you can't start a vm if it's a template", "start template")
}

func TestTasksRunOnTheClockAndHoldTheFlock(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startServer(t, Options{Clock: fake, TaskDurations: map[string]time.Duration{"qmstart": 20 * time.Second}})
	x := newTester(t, s)
	x.clone(101, "web-1")

	upid := x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/start", nil).upid(t)
	equal(t, x.task(upid)["status"], "running", "start task")
	v, _ := s.Emulator().VM(101)
	equal(t, v.Status, "stopped", "effect waits for completion")

	// Another mutation while the start task holds the flock.
	cfgUPID := x.do(http.MethodPost, "/nodes/pve1/qemu/101/config", url.Values{"cores": {"8"}}).upid(t)
	equal(t, x.exit(cfgUPID), "can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout", "qmconfig during start")
	isErrorReply(t, x.do(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"cores": {"8"}}), 500,
		"can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout")

	fake.Advance(19 * time.Second)
	equal(t, x.task(upid)["status"], "running", "start task before its time")
	fake.Advance(time.Second)
	equal(t, x.exit(upid), "OK", "start exit")
	v, _ = s.Emulator().VM(101)
	equal(t, v.Status, "running", "status after start")
	equal(t, v.Cores, 2, "cores unchanged by the failed calls")

	fake.Advance(90 * time.Second)
	cur := x.do(http.MethodGet, "/nodes/pve1/qemu/101/status/current", nil).dataMap(t)
	equal(t, cur["uptime"], float64(90), "uptime on the clock")
}

func TestResize(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	x.clone(101, "web-1")
	resize := func(size string) string {
		return x.exit(x.do(http.MethodPut, "/nodes/pve1/qemu/101/resize", url.Values{"disk": {"scsi0"}, "size": {size}}).upid(t))
	}
	equal(t, resize("+10G"), "OK", "grow by 10G")
	equal(t, x.config(101)["scsi0"], "local-lvm:vm-101-disk-0,size=20G", "after +10G")
	equal(t, resize("40G"), "OK", "absolute 40G")
	equal(t, x.config(101)["scsi0"], "local-lvm:vm-101-disk-0,size=40G", "after 40G")
	equal(t, resize("39G"), "shrinking disks is not supported", "shrink")
	equal(t, resize("40960M"), "OK", "same size")
	equal(t, resize("+512M"), "OK", "grow by 512M")
	equal(t, x.config(101)["scsi0"], "local-lvm:vm-101-disk-0,size=41472M", "after +512M")
	v, _ := s.Emulator().VM(101)
	equal(t, v.DiskGiB, 41, "DiskGiB rounds up")

	r := x.do(http.MethodPut, "/nodes/pve1/qemu/101/resize", url.Values{"disk": {"scsi0"}, "size": {"ten"}})
	equal(t, r.status, 400, "bad size")
	equal(t, r.body["errors"], map[string]any{"size": "value does not match the regex pattern"}, "bad size errors")
	equal(t, x.exit(x.do(http.MethodPut, "/nodes/pve1/qemu/101/resize", url.Values{"disk": {"virtio3"}, "size": {"+1G"}}).upid(t)),
		"disk 'virtio3' does not exist", "missing disk")
}
