package emulator

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/Telmate/proxmox-api-go/proxmox"
)

// upidRE is the UPID shape PVE produces (and Telmate's node regex reads).
var upidRE = regexp.MustCompile(`^UPID:[a-zA-Z0-9-]+:[0-9A-F]{8}:[0-9A-F]{8,9}:[0-9A-F]{8}:[a-z]+:\d*:[^:\s]+:$`)

// telmate returns a Telmate client for s with the CA pinned in its
// *http.Client and the default token.
func telmate(t *testing.T, s *Server) *proxmox.Client {
	t.Helper()
	c, err := proxmox.NewClient(s.URL(), pinnedClient(t, s), "", nil, "", 300, false)
	noErr(t, err)
	var id proxmox.ApiTokenID
	noErr(t, id.Parse(DefaultTokenID))
	c.SetAPIToken(id, proxmox.ApiTokenSecret(DefaultTokenSecret))
	return c
}

// upidOf decodes the {"data":"UPID…"} body the raw Telmate calls return.
func upidOf(t *testing.T, body string) string {
	t.Helper()
	var created struct {
		Data string `json:"data"`
	}
	noErr(t, json.Unmarshal([]byte(body), &created))
	if !upidRE.MatchString(created.Data) {
		t.Fatalf("not a UPID: %q", body)
	}
	return created.Data
}

func TestTelmateRawCalls(t *testing.T) {
	s := startServer(t, Options{})
	c := telmate(t, s)
	cx := ctx(t)

	v, err := c.GetVersion(cx)
	noErr(t, err)
	equal(t, v, proxmox.Version{Major: 8, Minor: 3, Patch: 0}, "version")

	list, err := c.GetResourceList(cx, "vm")
	noErr(t, err)
	mustEqual(t, len(list), 1, "resources")
	tpl := list[0].(map[string]any)
	equal(t, tpl["vmid"], float64(tplID), "vmid")
	equal(t, tpl["template"], float64(1), "template")
	equal(t, tpl["type"], "qemu", "type")
	equal(t, tpl["tags"], "base;ubuntu", "tags")
	equal(t, tpl["maxmem"], float64(2048<<20), "maxmem")
	equal(t, tpl["maxdisk"], float64(10<<30), "maxdisk")
	equal(t, tpl["maxcpu"], float64(2), "maxcpu")

	cfg, err := c.GetItemConfigMapStringInterface(cx, "/nodes/pve1/qemu/9000/config", "vm", "CONFIG")
	noErr(t, err)
	equal(t, cfg["memory"], "2048", "memory")
	equal(t, cfg["cores"], float64(2), "cores")
	equal(t, cfg["template"], float64(1), "template")
	equal(t, cfg["description"], "golden image", "description")
	equal(t, len(cfg["digest"].(string)), 40, "digest length")

	// Clone through the raw POST and wait on the UPID ourselves.
	body, err := c.CreateItemReturnStatus(cx, map[string]any{"newid": 101, "name": "web-1", "full": true}, "/nodes/pve1/qemu/9000/clone")
	noErr(t, err)
	upid := upidOf(t, body)
	equal(t, regexp.MustCompile(`:qmclone:9000:root@pam!emulator:$`).MatchString(upid), true, "qmclone UPID names the source and token: "+upid)
	exit, err := c.GetTaskExitstatus(cx, upid)
	noErr(t, err)
	equal(t, exit, "OK", "clone exit")

	cfg, err = c.GetItemConfigMapStringInterface(cx, "/nodes/pve1/qemu/101/config", "vm", "CONFIG")
	noErr(t, err)
	equal(t, cfg["name"], "web-1", "name")
	equal(t, cfg["tags"], "base;ubuntu", "tags copied")
	equal(t, cfg["description"], "golden image", "description copied")
	equal(t, cfg["ipconfig0"], "ip=dhcp", "ipconfig0 copied")
	equal(t, cfg["cicustom"], "user=local:snippets/user.yaml", "cicustom copied")
	equal(t, cfg["scsi0"], "local-lvm:vm-101-disk-0,size=10G", "scsi0")
	equal(t, cfg["template"], nil, "template flag")

	// PUT config is synchronous and answers null.
	body, err = c.UpdateItemReturnStatus(cx, map[string]any{"cores": 4, "memory": "4096", "tags": "web,Prod"}, "/nodes/pve1/qemu/101/config")
	noErr(t, err)
	equal(t, body, `{"data":null}`, "PUT body")
	st, err := c.GetVmState(cx, proxmox.NewVmRef(101)) //nolint:staticcheck // the call Telmate users still make
	noErr(t, err)
	equal(t, st["status"], "stopped", "status")
	equal(t, st["cpus"], float64(4), "cpus")
	equal(t, st["maxmem"], float64(4096<<20), "maxmem")
	equal(t, st["tags"], "prod;web", "tags")

	// POST config answers a UPID; the change lands when the task ends.
	body, err = c.CreateItemReturnStatus(cx, map[string]any{"description": "web server"}, "/nodes/pve1/qemu/101/config")
	noErr(t, err)
	exit, err = c.GetTaskExitstatus(cx, upidOf(t, body))
	noErr(t, err)
	equal(t, exit, "OK", "qmconfig exit")
	cfg, err = c.GetVmConfig(cx, proxmox.NewVmRef(101))
	noErr(t, err)
	equal(t, cfg["description"], "web server", "description after POST")

	ref, err := c.GetVmRefByName(cx, "web-1")
	noErr(t, err)
	equal(t, ref.VmId(), proxmox.GuestID(101), "ref id")
	equal(t, ref.Node(), proxmox.NodeName("pve1"), "ref node")

	exitStr, err := c.StartVm(cx, ref)
	noErr(t, err)
	equal(t, exitStr, "OK", "start exit")

	ifaces, err := c.GetVmAgentNetworkInterfaces(cx, ref)
	noErr(t, err)
	mustEqual(t, len(ifaces), 2, "interfaces")
	equal(t, ifaces[1].Name, "eth0", "iface name")
	mustEqual(t, len(ifaces[1].IpAddresses), 1, "eth0 addresses")
	equal(t, ifaces[1].IpAddresses[0].String(), "10.0.0.101", "eth0 address")
	equal(t, ifaces[1].MacAddress.String(), strings.ToLower(cfg["net0"].(string)[7:24]), "eth0 MAC from net0")

	guests, err := proxmox.ListGuests(cx, c)
	noErr(t, err)
	equal(t, len(guests), 2, "ListGuests")

	next, err := c.GetNextID(cx, nil)
	noErr(t, err)
	equal(t, next, proxmox.GuestID(100), "next id")
	start := proxmox.GuestID(9000)
	next, err = c.GetNextID(cx, &start)
	noErr(t, err)
	equal(t, next, proxmox.GuestID(9001), "next id from a taken one (Telmate walks on the 400)")
}

func TestTelmateErrors(t *testing.T) {
	s := startServer(t, Options{})
	c := telmate(t, s)
	cx := ctx(t)

	_, err := c.GetItemConfigMapStringInterface(cx, "/nodes/pve1/qemu/555/config", "vm", "CONFIG")
	var apiErr *proxmox.ApiError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *ApiError", err)
	}
	equal(t, apiErr.Code, "500", "code")
	equal(t, apiErr.Message, "Configuration file 'nodes/pve1/qemu-server/555.conf' does not exist", "message")

	// Before PVE 8.3 the message is only in the reason phrase, which the
	// Telmate client drops: its ApiError then has an empty message.
	s.Emulator().SetLegacyErrors(true)
	_, err = c.GetItemConfigMapStringInterface(cx, "/nodes/pve1/qemu/555/config", "vm", "CONFIG")
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *ApiError", err)
	}
	equal(t, apiErr.Code, "500", "legacy code")
	equal(t, apiErr.Message, "", "legacy message")
	s.Emulator().SetLegacyErrors(false)

	// A stopped VM's agent maps to Telmate's "vm is not running".
	_, err = c.GetVmAgentNetworkInterfaces(cx, proxmox.NewVmRef(tplID))
	if err == nil || err.Error() != "vm is not running" {
		t.Errorf("agent of a stopped VM: err = %v, want \"vm is not running\"", err)
	}

	// A failed task: the exit status becomes the error.
	s.Emulator().FailNextTask("qmclone", ExitStorageLockTimeout)
	body, err := c.CreateItemReturnStatus(cx, map[string]any{"newid": 102}, "/nodes/pve1/qemu/9000/clone")
	noErr(t, err)
	_, err = c.GetTaskExitstatus(cx, upidOf(t, body))
	if err == nil || err.Error() != ExitStorageLockTimeout {
		t.Errorf("failed clone err = %v", err)
	}

	// Warnings are a success for Telmate.
	s.Emulator().WarnNextTask("qmclone", 2)
	body, err = c.CreateItemReturnStatus(cx, map[string]any{"newid": 103}, "/nodes/pve1/qemu/9000/clone")
	noErr(t, err)
	exit, err := c.GetTaskExitstatus(cx, upidOf(t, body))
	noErr(t, err)
	equal(t, exit, "WARNINGS: 2", "warnings exit")
}
