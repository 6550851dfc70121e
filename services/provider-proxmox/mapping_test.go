package proxmox

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
)

func TestMachineStateTable(t *testing.T) {
	cases := []struct {
		template      bool
		lock, status  string
		state         api.MachineState
		isMachine     bool
		coveredMapKey string
	}{
		{true, "", "stopped", "", false, "template"},
		{true, "clone", "stopped", "", false, "template"},
		{false, "clone", "stopped", api.StatePending, true, "lock=clone"},
		{false, "create", "stopped", api.StatePending, true, "lock=create"},
		{false, "rollback", "running", api.StatePending, true, "lock=rollback"},
		{false, "suspending", "running", api.StateRunning, true, "lock=suspending"},
		{false, "suspended", "stopped", api.StateStopped, true, "lock=suspended"},
		{false, "backup", "running", api.StateRunning, true, "status=running"},
		{false, "migrate", "running", api.StateRunning, true, "status=running"},
		{false, "snapshot", "stopped", api.StateStopped, true, "status=stopped"},
		{false, "", "running", api.StateRunning, true, "status=running"},
		{false, "", "stopped", api.StateStopped, true, "status=stopped"},
		{false, "", "unknown", api.StateUnknown, true, "status=unknown"},
		{false, "", "paused", api.StateUnknown, true, ""}, // a status PVE may add
		{false, "", "", api.StateUnknown, true, ""},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		state, machine := machineState(c.template, c.lock, c.status)
		if state != c.state || machine != c.isMachine {
			t.Errorf("machineState(%v, %q, %q) = %q, %v; want %q, %v", c.template, c.lock, c.status, state, machine, c.state, c.isMachine)
		}
		covered[c.coveredMapKey] = true
	}
	for k := range machineStates {
		if !covered[k] {
			t.Errorf("machineStates[%q] has no case", k)
		}
	}
}

func TestPowerEndpointsTable(t *testing.T) {
	joined := make(map[api.PowerAction]string, len(powerEndpoints))
	for action, endpoints := range powerEndpoints {
		joined[action] = strings.Join(endpoints, ",")
	}
	providertest.WantPowerTable(t, joined, map[api.PowerAction]string{
		api.ActionOn: "start", api.ActionOff: "stop", api.ActionGracefulOff: "shutdown",
		api.ActionReset: "reset", api.ActionGracefulRestart: "reboot", api.ActionCycle: "stop,start",
	})
}

func TestFailureTable(t *testing.T) {
	cases := []struct {
		status int
		msg    string
		kind   failureKind
		code   api.Code
	}{
		{401, "invalid token value!", kindUnauthorized, api.CodeProviderError},
		{401, "no such token 'x' for user 'root@pam'", kindUnauthorized, api.CodeProviderError},
		{403, "Permission check failed (/vms/100, VM.PowerMgmt)", kindForbidden, api.CodeProviderError},
		{595, "No route to host", kindNodeOffline, api.CodeProviderError},
		{400, "Parameter verification failed. (vmid: VM 100 already exists)", kindParameter, api.CodeProviderError},
		{500, "Configuration file 'nodes/pve1/qemu-server/555.conf' does not exist", kindNoSuchVM, api.CodeNotFound},
		{500, "unable to create VM 101: config file already exists", kindExists, api.CodeProviderError},
		{500, "VM is locked (clone)", kindLocked, api.CodeProviderError},
		{500, "can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout", kindLocked, api.CodeProviderError},
		{500, "VM 101 not running", kindNotRunning, api.CodeInvalidState},
		{500, "VM 101 already running", kindAlreadyRunning, api.CodeProviderError},
		{500, "VM 101 is running - destroy failed", kindRunning, api.CodeProviderError},
		{500, "QEMU guest agent is not running", kindNoAgent, api.CodeProviderError},
		{500, "No QEMU guest agent configured", kindNoAgent, api.CodeProviderError},
		{500, "VM 101 is not running", kindNoAgent, api.CodeProviderError},
		{500, "VM 101 qmp command 'guest-network-get-interfaces' failed - got timeout", kindNoAgent, api.CodeProviderError},
		{500, "clone failed: cfs-lock 'storage-local-lvm' error: got lock request timeout", kindAPI, api.CodeProviderError},
		{501, "Method 'GET /nodes/pve1/foo' not implemented", kindAPI, api.CodeProviderError},
		{502, "Bad Gateway", kindAPI, api.CodeProviderError},
		{422, "Unprocessable Entity", kindAPI, api.CodeProviderError},
	}
	for _, c := range cases {
		f := &pveError{status: c.status, message: c.msg, kind: classifyFailure(c.status, c.msg)}
		if f.kind != c.kind {
			t.Errorf("classify(%d, %q) = %s, want %s", c.status, c.msg, f.kind, c.kind)
		}
		ce := f.computeError()
		if ce.Code != c.code {
			t.Errorf("%d %q → %s, want %s", c.status, c.msg, ce.Code, c.code)
		}
		if ce.Code == api.CodeProviderError && !hasAPIStatus(ce, c.status, string(c.kind)) {
			t.Errorf("%d %q → details %v, want status %d code %s", c.status, c.msg, ce.Details, c.status, c.kind)
		}
		// Only a refusal of the request itself can never pass.
		if want := c.status == 400 || c.status == 422 || c.code.Terminal(); ce.Permanent() != want {
			t.Errorf("%d %q → permanent %v, want %v", c.status, c.msg, ce.Permanent(), want)
		}
	}
	task := taskFailure("UPID:pve1:00010001:00100000:65E1A1C0:qmclone:9000:root@pam!x:", "clone failed: boom").computeError()
	if task.Code != api.CodeProviderError || !hasAPIStatus(task, http.StatusOK, "clone failed: boom") || task.Permanent() {
		t.Errorf("task failure → %+v, want PROVIDER_ERROR with the exit status as code", task)
	}
	for _, exit := range []string{"OK", "WARNINGS: 1", "WARNINGS: 12"} {
		if err := taskOutcome("UPID:x", exit); err != nil {
			t.Errorf("exit %q is a failure: %v", exit, err)
		}
	}
}

func TestHTTPFailureMessage(t *testing.T) {
	cases := []struct {
		name, statusLine, body, want string
	}{
		{"modern", "500 VM is locked (clone)", `{"data":null,"message":"VM is locked (clone)\n"}`, "VM is locked (clone)"},
		{"legacy: reason phrase", "500 VM is locked (clone)", `{"data":null}`, "VM is locked (clone)"},
		{"not json", "502 Bad Gateway", `<html>`, "Bad Gateway"},
		{"no phrase", "500", ``, "Internal Server Error"},
		{"parameters", "400 Parameter verification failed.", `{"data":null,"errors":{"b":"bad","a":"worse"},"message":"Parameter verification failed.\n"}`,
			"Parameter verification failed. (a: worse; b: bad)"},
		{"odd message type", "500 boom", `{"message":{"x":1},"errors":"nope"}`, "boom"},
	}
	for _, c := range cases {
		status := 500
		if strings.HasPrefix(c.statusLine, "400") {
			status = 400
		} else if strings.HasPrefix(c.statusLine, "502") {
			status = 502
		}
		if got := httpFailure(status, c.statusLine, []byte(c.body)).message; got != c.want {
			t.Errorf("%s: message %q, want %q", c.name, got, c.want)
		}
	}
}

func TestTags(t *testing.T) {
	cases := map[string]bool{
		"Prod,Better-Compute":  true,
		"a;better-compute":     true,
		"better-compute":       true,
		"x BETTER-COMPUTE\ty":  true,
		"better-compute-extra": false,
		"bettercompute":        false,
		"":                     false,
	}
	for tags, want := range cases {
		if got := hasManagedTag(tags); got != want {
			t.Errorf("hasManagedTag(%q) = %v, want %v", tags, got, want)
		}
	}
	if got := withTag("Web,prod web", ManagedTag); got != "better-compute;prod;web" {
		t.Errorf("withTag = %q", got)
	}
	managed := []struct {
		tags, desc string
		want       bool
	}{
		{"Prod,Better-Compute", ManagedDescription("inst_1", "small"), true},
		{"a;better-compute", "notes\n" + keyLinePrefix + "inst_1", true},
		{"prod", ManagedDescription("inst_1", "small"), false},
		{ManagedTag, "golden image", false},
		{ManagedTag, keyLinePrefix, false},
	}
	for _, m := range managed {
		if got := IsManaged(m.tags, m.desc); got != m.want {
			t.Errorf("IsManaged(%q, %q) = %v, want %v", m.tags, m.desc, got, m.want)
		}
	}
}

func TestDescription(t *testing.T) {
	for _, key := range []string{"inst_01jd", "a b\nc=d%", "ключ", strings.Repeat("k", 255)} {
		d := ManagedDescription(key, "small")
		if got, ok := descriptionValue(d, keyLinePrefix); !ok || got != key {
			t.Errorf("key %q read back as %q, %v", key, got, ok)
		}
		if got, _ := descriptionValue(d, offerLinePrefix); got != "small" {
			t.Errorf("offer read back as %q", got)
		}
		if strings.Count(d, "\n") != 2 {
			t.Errorf("description of %q is not three lines: %q", key, d)
		}
	}
	owner := "notes by the operator\n  " + keyLinePrefix + "inst_x  \nmore"
	if got, ok := descriptionValue(owner, keyLinePrefix); !ok || got != "inst_x" {
		t.Errorf("key among other lines = %q, %v", got, ok)
	}
	for _, d := range []string{"", "golden image", keyLinePrefix, keyLinePrefix + "%zz"} {
		if got, ok := descriptionValue(d, keyLinePrefix); ok {
			t.Errorf("description %q holds key %q", d, got)
		}
	}
}

// FuzzDescription: any key survives the description round trip, and no
// description makes the reader panic or find a key it does not hold.
func FuzzDescription(f *testing.F) {
	for _, s := range []string{"inst_01jd", "a\nb", "%", keyLinePrefix + "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s != "" {
			if got, ok := descriptionValue(ManagedDescription(s, "o"), keyLinePrefix); !ok || got != s {
				t.Fatalf("key %q read back as %q, %v", s, got, ok)
			}
		}
		if got, ok := descriptionValue(s, keyLinePrefix); ok && !strings.Contains(s, keyLinePrefix) {
			t.Fatalf("description %q without a key line holds %q", s, got)
		}
	})
}

func TestProbeSlots(t *testing.T) {
	for _, r := range [][2]int{{10000, 19999}, {100, 100}, {10000, 10009}, {500, 563}} {
		lo, hi := r[0], r[1]
		for _, key := range []string{"a", "inst_01jd", "ζ"} {
			slots := probeSlots(key, lo, hi)
			if len(slots) != min(MaxProbes, hi-lo+1) || slots[0] != keySlot(key, lo, hi) {
				t.Fatalf("[%d,%d] %q: %v", lo, hi, key, slots)
			}
			seen := map[int]bool{}
			for i, s := range slots {
				if s < lo || s > hi || seen[s] {
					t.Fatalf("[%d,%d] %q: slot %d (%d) out of range or repeated: %v", lo, hi, key, i, s, slots)
				}
				if i > 0 && s != slots[i-1]+1 && !(slots[i-1] == hi && s == lo) {
					t.Fatalf("[%d,%d] %q: slots not consecutive: %v", lo, hi, key, slots)
				}
				seen[s] = true
			}
		}
	}
	if a, b := keySlot("inst_01jd", 10000, 19999), keySlot("inst_01jd", 10000, 19999); a != b {
		t.Fatal("keySlot is not deterministic")
	}
}

// TestVMName: VM names are provider.HostnameLabel (tested there) with the
// fallback "vm".
func TestVMName(t *testing.T) {
	cases := map[string]string{
		"inst_01JDABC": "inst-01jdabc",
		"___":          "vm",
		"":             "vm",
	}
	for in, want := range cases {
		if got := vmName(in); got != want {
			t.Errorf("vmName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVMConfigReading(t *testing.T) {
	cfg, err := decodeVMConfig([]byte(`{"cores":4,"memory":"current=2048,min=1024","template":1,"agent":"enabled=1,fstrim_cloned_disks=1",
		"boot":"order=ide2;virtio0;net0","ide2":"local-lvm:vm-1-cloudinit,media=cdrom","virtio0":"local-lvm:vm-1-disk-0,size=1.5T",
		"scsi0":"local-lvm:vm-1-disk-1,size=512M","numa":false,"nested":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.cores() != 4 || cfg.memoryMiB() != 2048 || !cfg.isTemplate() || !cfg.agentEnabled() || cfg["numa"] != "0" {
		t.Errorf("config read as %v", cfg)
	}
	if _, ok := cfg["nested"]; ok {
		t.Errorf("a nested value was kept")
	}
	if k, size, ok := cfg.bootDisk(); !ok || k != "virtio0" || size != 3<<39 {
		t.Errorf("boot disk = %s %d %v, want virtio0 1.5 TiB (the CD-ROM skipped)", k, size, ok)
	}
	if cfg := (vmConfig{"memory": "x", "agent": "0"}); cfg.memoryMiB() != 512 || cfg.cores() != 1 || cfg.agentEnabled() {
		t.Errorf("defaults: %d MiB, %d cores, agent %v", cfg.memoryMiB(), cfg.cores(), cfg.agentEnabled())
	}
	if _, _, ok := (vmConfig{"ide2": "none,media=cdrom"}).bootDisk(); ok {
		t.Error("a CD-ROM is a boot disk")
	}
	sizes := map[string]int64{"10G": 10 << 30, "512M": 512 << 20, "2048": 2048, "1T": 1 << 40, "x": 0, "-1G": 0}
	for in, want := range sizes {
		if got := parseSize(in); got != want {
			t.Errorf("parseSize(%q) = %d, want %d", in, got, want)
		}
	}
	nets := map[string]string{
		"virtio=BC:24:11:00:00:01,bridge=vmbr1,firewall=1": "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1",
		"virtio=BC:24:11:00:00:01":                         "virtio=BC:24:11:00:00:01,bridge=vmbr0",
		"":                                                 "virtio,bridge=vmbr0",
	}
	for in, want := range nets {
		if got := withBridge(in, "vmbr0"); got != want {
			t.Errorf("withBridge(%q) = %q, want %q", in, got, want)
		}
	}
	ci := map[string]string{
		"":                                      "user=local:snippets/u.yaml",
		"user=local:snippets/old.yaml,meta=m:x": "user=local:snippets/u.yaml,meta=m:x",
		"network=local:snippets/n.yaml":         "user=local:snippets/u.yaml,network=local:snippets/n.yaml",
	}
	for in, want := range ci {
		if got := withUserVolume(in, "local:snippets/u.yaml"); got != want || userVolume(got) != "local:snippets/u.yaml" {
			t.Errorf("withUserVolume(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigUpdate(t *testing.T) {
	want := &vmSpec{key: "k", cores: 2, memoryMiB: 4096, diskGiB: 20, userVolume: "local:snippets/u.yaml",
		net: netSpec{bridge: "vmbr0", ipconfig0: ipDHCP}}
	fresh := vmConfig{"cores": "1", "sockets": "2", "memory": "2048", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr1",
		"tags": "base", "cicustom": "network=local:snippets/n.yaml"}
	u := configUpdate(fresh, want, false)
	keys := make([]string, 0, len(u))
	for k := range u {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "cicustom,cores,ipconfig0,memory,net0,sockets" || u["cicustom"] != "user=local:snippets/u.yaml,network=local:snippets/n.yaml" || u["sockets"] != 1 {
		t.Fatalf("update of a fresh clone = %v", u)
	}
	done := vmConfig{"cores": "2", "sockets": "1", "memory": "4096", "ipconfig0": "ip=dhcp", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
		"tags": "base;better-compute", "cicustom": "user=local:snippets/u.yaml,network=local:snippets/n.yaml"}
	if u := configUpdate(done, want, false); len(u) != 0 {
		t.Fatalf("update of a configured VM = %v, want none", u)
	}
	tagCases := []struct {
		have, keep, want string
		change           bool
	}{
		{"base", "", "base;better-compute", true},
		{"", "", "better-compute", true},
		{"Better-Compute,base", "", "base;better-compute", false},
		{"base", "prod;better-compute", "better-compute;prod", true},
	}
	for _, tc := range tagCases {
		if got, change := tagUpdate(vmConfig{"tags": tc.have}, &vmSpec{tags: tc.keep}); got != tc.want || change != tc.change {
			t.Errorf("tagUpdate(%q, keep %q) = %q, %v; want %q, %v", tc.have, tc.keep, got, change, tc.want, tc.change)
		}
	}
}

// hasAPIStatus reports whether ce's details carry the API status and code.
func hasAPIStatus(ce *api.ComputeError, status int, code string) bool {
	got, gotCode := ce.APIStatus()
	return ce.Details.Status != nil && ce.Details.Code != nil && got == status && gotCode == code
}
