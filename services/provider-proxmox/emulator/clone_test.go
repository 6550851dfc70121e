package emulator

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/clock"
)

func TestCloneLocksTargetWhileRunning(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startServer(t, Options{Clock: fake, TaskDurations: map[string]time.Duration{"qmclone": 30 * time.Second}})
	x := newTester(t, s)

	upid := x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"101"}, "name": {"web-1"}}).upid(t)
	st := x.task(upid)
	equal(t, st["status"], "running", "task status")
	equal(t, st["exitstatus"], nil, "no exit status yet")

	cfg := x.config(101)
	equal(t, cfg["lock"], "clone", "target lock")
	equal(t, cfg["name"], nil, "target name while cloning")
	equal(t, len(cfg), 2, "target config holds only lock and digest")
	cur := x.do(http.MethodGet, "/nodes/pve1/qemu/101/status/current", nil).dataMap(t)
	equal(t, cur["name"], "VM 101", "status name while cloning")
	equal(t, cur["lock"], "clone", "status lock")

	// Mutating the target meanwhile hits the config lock.
	r := x.do(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"cores": {"4"}})
	isErrorReply(t, r, 500, "VM is locked (clone)")
	cfgUPID := x.do(http.MethodPost, "/nodes/pve1/qemu/101/config", url.Values{"cores": {"4"}}).upid(t)
	equal(t, x.exit(cfgUPID), "VM is locked (clone)", "qmconfig on a cloning VM")
	r = x.do(http.MethodDelete, "/nodes/pve1/qemu/101", nil)
	isErrorReply(t, r, 500, "VM is locked (clone)")
	// The next free VMID skips the reserved one.
	equal(t, x.do(http.MethodGet, "/cluster/nextid", url.Values{"vmid": {"101"}}).status, 400, "nextid of the reserved VMID")

	fake.Advance(30 * time.Second)
	equal(t, x.exit(upid), "OK", "clone exit")
	cfg = x.config(101)
	equal(t, cfg["lock"], nil, "lock after clone")
	equal(t, cfg["name"], "web-1", "name after clone")
	equal(t, cfg["cores"], float64(2), "cores copied, the failed qmconfig not applied")
}

func TestConcurrentClonesToSameNewID(t *testing.T) {
	s := startServer(t, Options{TaskDurations: map[string]time.Duration{"qmclone": time.Hour}})
	x := newTester(t, s)
	const n = 12
	replies := make([]reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"150"}})
		}()
	}
	wg.Wait()
	ok := 0
	for _, r := range replies {
		switch r.status {
		case http.StatusOK:
			ok++
		default:
			isErrorReply(t, r, 500, "unable to create VM 150: config file already exists")
		}
	}
	equal(t, ok, 1, "clones accepted")
	count := 0
	for _, v := range s.Emulator().VMs() {
		if v.VMID == 150 {
			count++
			equal(t, v.Lock, "clone", "the one clone's lock")
		}
	}
	equal(t, count, 1, "VMs with VMID 150")
}

func TestCloneToExistingVMIDIsSynchronous500(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	r := x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"9000"}})
	isErrorReply(t, r, 500, "unable to create VM 9000: config file already exists")
}

func TestCloneTargetAppearingDuringCloneFailsTheTask(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startServer(t, Options{Clock: fake, TaskDurations: map[string]time.Duration{"qmclone": 10 * time.Second}})
	x := newTester(t, s)
	e := s.Emulator()
	upid := x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"101"}}).upid(t)
	noErr(t, e.DeleteVM(101))
	ids, err := e.SeedVMs(SeedSpec{Count: 1, FirstVMID: 101})
	noErr(t, err)
	equal(t, ids, []int{101}, "seeded")
	fake.Advance(10 * time.Second)
	equal(t, x.exit(upid), "unable to create VM 101: config file already exists", "clone exit")
	v, ok := e.VM(101)
	equal(t, ok && v.Name == "vm-101", true, "the seeded VM survives")
}

func TestFailedCloneRemovesTarget(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startServer(t, Options{Clock: fake, TaskDurations: map[string]time.Duration{"qmclone": 5 * time.Second}})
	x := newTester(t, s)
	s.Emulator().FailNextTask("qmclone", ExitStorageLockTimeout)
	upid := x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"101"}}).upid(t)
	equal(t, x.config(101)["lock"], "clone", "target exists while the doomed clone runs")
	fake.Advance(5 * time.Second)
	equal(t, x.exit(upid), ExitStorageLockTimeout, "exit status")
	r := x.do(http.MethodGet, "/nodes/pve1/qemu/101/config", nil)
	isErrorReply(t, r, 500, "Configuration file 'nodes/pve1/qemu-server/101.conf' does not exist")
	equal(t, x.do(http.MethodGet, "/cluster/nextid", nil).data(), "100", "nextid")
	equal(t, x.do(http.MethodGet, "/cluster/nextid", url.Values{"vmid": {"101"}}).data(), "101", "101 is free again")
}

func TestCloneParameters(t *testing.T) {
	s := startServer(t, Options{Nodes: []Node{{Name: "pve1"}, {Name: "pve2"}}})
	x := newTester(t, s)

	r := x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"name": {"x"}})
	equal(t, r.status, 400, "missing newid")
	equal(t, r.body["errors"], map[string]any{"newid": "property is missing and it is not optional"}, "errors")
	equal(t, r.body["message"], "Parameter verification failed.\n", "message")
	equal(t, r.reason, "Parameter verification failed.", "reason")

	r = x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"101"}, "name": {"bad_name"}})
	equal(t, r.body["errors"], map[string]any{"name": "invalid format - value does not look like a valid DNS name"}, "bad name")

	r = x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"101"}, "target": {"pve9"}})
	isErrorReply(t, r, 500, "no such cluster node 'pve9'")

	// Linked clone (the default for a template) keeps the base volume.
	x.clone(101, "")
	cfg := x.config(101)
	equal(t, cfg["name"], "Copy-of-VM-ubuntu-24-04", "default clone name")

	r = x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"102"}, "target": {"pve2"}})
	isErrorReply(t, r, 500, "can't clone VM to node 'pve2' (VM uses local storage)")

	upid := x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"102"},
		"description": {"custom  \n"}, "pool": {"ci"}}).upid(t)
	equal(t, x.exit(upid), "OK", "clone on pve1")
	v, _ := s.Emulator().VM(102)
	equal(t, v.Node, "pve1", "clone node")
	equal(t, v.Description, "custom", "description override, trimmed")
	equal(t, v.Pool, "ci", "pool")
	equal(t, v.Config["scsi0"], "local-lvm:base-9000-disk-0/vm-102-disk-0,size=10G", "linked clone volume")
	equal(t, v.Config["net0"] != cfg["net0"], true, "a new MAC per clone")

	r = x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"103"}, "storage": {"nope"}, "full": {"1"}})
	isErrorReply(t, r, 500, "storage 'nope' does not exist")
}
