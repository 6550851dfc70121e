package emulator

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"
)

// Nodes list their bridges; a VM whose net0 names a bridge its node lacks
// fails to start (PVE's "bridge '…' does not exist"); a VLAN tag outside
// 1–4094 is a 400; the tag is kept as written, and a net value written
// without a MAC gets one.
func TestBridgesAndVLANTags(t *testing.T) {
	s := startServer(t, Options{Nodes: []Node{{Name: "pve1", Bridges: []string{"vmbr0", "vmbr1"}}}})
	x := newTester(t, s)
	list := x.do(http.MethodGet, "/nodes/pve1/network", url.Values{"type": {"any_bridge"}}).data()
	ifaces, _ := list.([]any)
	equal(t, len(ifaces), 2, "bridges listed")

	x.clone(101, "a")
	r := x.do(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"net0": {"virtio,bridge=vmbr1,tag=4095"}})
	equal(t, r.status, 400, "tag 4095")
	r = x.do(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"net0": {"virtio,bridge=vmbr1,tag=42"},
		"ipconfig0": {"ip=192.168.10.17/24,gw=192.168.10.1"}, "nameserver": {"192.168.10.2"}})
	equal(t, r.status, 200, "tag 42")
	cfg := x.config(101)
	// PVE generates the MAC a net value written without one lacks.
	if !regexp.MustCompile(`^virtio=BC:24:11(:[0-9A-F]{2}){3},bridge=vmbr1,tag=42$`).MatchString(fmt.Sprint(cfg["net0"])) {
		t.Errorf("net0 = %q, want virtio=<a new MAC>,bridge=vmbr1,tag=42", cfg["net0"])
	}
	equal(t, cfg["ipconfig0"], "ip=192.168.10.17/24,gw=192.168.10.1", "ipconfig0 kept")
	upid := x.do(http.MethodPost, "/nodes/pve1/qemu/101/status/start", nil).upid(t)
	equal(t, x.exit(upid), "OK", "start on vmbr1")

	x.clone(102, "b")
	x.do(http.MethodPut, "/nodes/pve1/qemu/102/config", url.Values{"net0": {"virtio,bridge=vmbr9"}})
	upid = x.do(http.MethodPost, "/nodes/pve1/qemu/102/status/start", nil).upid(t)
	equal(t, x.exit(upid), "bridge 'vmbr9' does not exist", "start on a bridge the node lacks")
}

// Clones to another node need the template's disks on shared storage and
// a shared target storage there; a storage the node lacks is refused.
func TestCloneAcrossNodesAndStorages(t *testing.T) {
	shared := testTemplate()
	shared.VMID, shared.Name, shared.Storage = 9100, "shared-tpl", "ceph"
	s := startServer(t, Options{Nodes: []Node{{Name: "pve1"}, {Name: "pve2"}},
		Storages:  []Storage{{Name: "ceph", Shared: true}, {Name: "fast", Nodes: []string{"pve2"}}},
		Templates: []Template{testTemplate(), shared}})
	x := newTester(t, s)
	full := func(tpl, newid, target, storage string) reply {
		form := url.Values{"newid": {newid}, "full": {"1"}, "target": {target}}
		if storage != "" {
			form.Set("storage", storage)
		}
		return x.do(http.MethodPost, "/nodes/pve1/qemu/"+tpl+"/clone", form)
	}
	isErrorReply(t, full("9000", "201", "pve2", ""), 500, "can't clone VM to node 'pve2' (VM uses local storage)")
	isErrorReply(t, full("9100", "201", "pve2", "fast"), 500, "can't clone to non-shared storage 'fast'")
	isErrorReply(t, full("9000", "201", "pve1", "fast"), 500, "storage 'fast' is not available on node 'pve1'")
	equal(t, x.exit(full("9100", "201", "pve2", "").upid(t)), "OK", "shared template to pve2")
	v, _ := s.Emulator().VM(201)
	equal(t, v.Node, "pve2", "node")
	equal(t, v.Config["scsi0"], "ceph:vm-201-disk-0,size=10G", "disk kept on the shared storage")
}
