package emulator

import (
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// VM power states as PVE reports them.
const (
	// StatusRunning is a running VM.
	StatusRunning = "running"
	// StatusStopped is a stopped VM.
	StatusStopped = "stopped"
)

// vm is one QEMU guest. Its config map is the source of truth for
// everything PVE keeps in qemu-server/{vmid}.conf (name, cores, memory,
// disks, tags, description, lock, template, …), all values as strings.
type vm struct {
	id           int
	node         string
	config       map[string]string
	status       string
	startedAt    time.Time
	pool         string
	agentRunning bool
	agentIfaces  []AgentInterface // nil: derived from the config
	busy         *task            // task holding the config's flock
	clonedFrom   int              // the template's VMID, for a clone
	sshPort      int              // its SSH endpoint's loopback port (0: none)
	// pending holds config values set while the VM ran that its hot-plug
	// settings do not take live (see hotplug.go); applied at the next start.
	pending map[string]string
}

// diskKeyPattern matches config keys that are drives.
var diskKeyPattern = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$|^(efidisk|tpmstate)0$`)

// name is the VM's name, or PVE's "VM {vmid}" stand-in.
func (v *vm) name() string {
	if n := v.config["name"]; n != "" {
		return n
	}
	return "VM " + strconv.Itoa(v.id)
}

// isTemplate reports whether the VM is a template.
func (v *vm) isTemplate() bool { return v.config["template"] == "1" }

// lock is the config's lock ("clone", "backup", …) or "".
func (v *vm) lock() string { return v.config["lock"] }

// cpus is what PVE reports as cpus/maxcpu: vcpus if set, else
// sockets*cores (each defaulting to 1).
func (v *vm) cpus() int {
	if n := atoiOr(v.config["vcpus"], 0); n > 0 {
		return n
	}
	return atoiOr(v.config["sockets"], 1) * atoiOr(v.config["cores"], 1)
}

// cores is the config's cores (default 1).
func (v *vm) cores() int { return atoiOr(v.config["cores"], 1) }

// memoryMiB is the config's memory (PVE's default 512). PVE 8 accepts both
// "2048" and "current=2048".
func (v *vm) memoryMiB() int {
	m := v.config["memory"]
	m = strings.TrimPrefix(strings.Split(m, ",")[0], "current=")
	return atoiOr(m, 512)
}

// bootDisk returns the boot disk's key and size: the first drive in
// boot=order=… that exists and is not a CD-ROM, else the first of scsi0,
// virtio0, sata0, ide0 (Guess: PVE's maxdisk comes from the boot disk).
func (v *vm) bootDisk() (string, int64) {
	var candidates []string
	if order, ok := strings.CutPrefix(v.config["boot"], "order="); ok {
		candidates = strings.Split(order, ";")
	}
	candidates = append(candidates, "scsi0", "virtio0", "sata0", "ide0")
	for _, k := range candidates {
		if d, ok := v.config[k]; ok && diskKeyPattern.MatchString(k) && !isCDROM(d) {
			return k, driveSize(d)
		}
	}
	return "", 0
}

// agentConfigured reports whether the config enables the guest agent
// ("agent: 1" or "agent: enabled=1,…").
func (v *vm) agentConfigured() bool {
	a, ok := v.config["agent"]
	if !ok {
		return false
	}
	first := strings.Split(a, ",")[0]
	first = strings.TrimPrefix(first, "enabled=")
	return first == "1" || first == "true" || first == "yes" || first == "on"
}

// uptime is the seconds since start for a running VM, else 0.
func (v *vm) uptime(now time.Time) int64 {
	if v.status != StatusRunning {
		return 0
	}
	return int64(now.Sub(v.startedAt) / time.Second)
}

// digest is the SHA-1 over the config, as PVE returns and checks it.
func (v *vm) digest() string {
	keys := make([]string, 0, len(v.config))
	for k := range v.config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha1.New()
	for _, k := range keys {
		h.Write([]byte(k + ": " + v.config[k] + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// atoiOr parses s, returning def when s is empty or not a number.
func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}
