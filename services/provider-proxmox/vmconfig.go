package proxmox

import (
	"encoding/json"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// vmConfig is a VM's config as GET /nodes/{node}/qemu/{vmid}/config
// answers it, every value as a string (numbers and booleans as PVE writes
// them in the config file).
type vmConfig map[string]string

// decodeVMConfig reads a config reply. Values that are neither strings,
// numbers nor booleans (PVE's config is flat) are dropped.
func decodeVMConfig(data json.RawMessage) (vmConfig, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	out := make(vmConfig, len(raw))
	for k, v := range raw {
		var s string
		var n json.Number
		var b bool
		switch {
		case json.Unmarshal(v, &s) == nil:
			out[k] = s
		case json.Unmarshal(v, &n) == nil:
			out[k] = n.String()
		case json.Unmarshal(v, &b) == nil && b:
			out[k] = "1"
		case json.Unmarshal(v, &b) == nil:
			out[k] = "0"
		}
	}
	return out, nil
}

// ManagedTag is the tag every VM of this system carries.
const ManagedTag = "better-compute"

// isTemplate reports whether the config is a template's.
func (c vmConfig) isTemplate() bool { return c["template"] == "1" }

// lock is the config's lock ("clone", "backup", …) or "".
func (c vmConfig) lock() string { return c["lock"] }

// managed reports whether the VM is one of this system's (IsManaged).
func (c vmConfig) managed() bool { return IsManaged(c["tags"], c["description"]) }

// key is the idempotency key recorded in the description.
func (c vmConfig) key() (string, bool) { return descriptionValue(c["description"], keyLinePrefix) }

// cloneOf is the template VMID the description's clone-of line names:
// false when it has none (a finished VM, or one made before the line
// existed).
func (c vmConfig) cloneOf() (int, bool) {
	v, ok := descriptionValue(c["description"], cloneOfLinePrefix)
	vmid, err := strconv.Atoi(v)
	return vmid, ok && err == nil
}

// offer is the offer recorded in the description ("" when none).
func (c vmConfig) offer() string {
	o, _ := descriptionValue(c["description"], offerLinePrefix)
	return o
}

// cores is the config's cores (PVE's default 1).
func (c vmConfig) cores() int { return atoiOr(c["cores"], 1) }

// memoryMiB is the config's memory in MiB (PVE's default 512); PVE 8.1+
// also writes it as "current=2048[,…]".
func (c vmConfig) memoryMiB() int {
	first, _, _ := strings.Cut(c["memory"], ",")
	return atoiOr(strings.TrimPrefix(first, "current="), 512)
}

// agentEnabled reports whether the QEMU guest agent is enabled ("1" or
// "enabled=1,…").
func (c vmConfig) agentEnabled() bool {
	first, _, _ := strings.Cut(c["agent"], ",")
	switch strings.TrimPrefix(first, "enabled=") {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// staticAddress is the IPv4 address of ipconfig0's "ip=<address>/<len>"
// (a static address: the pool's network.addresses), and false for DHCP,
// none or anything else.
func (c vmConfig) staticAddress() (string, bool) {
	for _, opt := range strings.Split(c["ipconfig0"], ",") {
		if v, ok := strings.CutPrefix(opt, "ip="); ok {
			p, err := netip.ParsePrefix(v)
			if err != nil || !p.Addr().Is4() {
				return "", false
			}
			return p.Addr().String(), true
		}
	}
	return "", false
}

// diskKeyPattern matches the config keys of drives that can be boot disks.
var diskKeyPattern = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$`)

// bootDisk is the boot disk's key and size in bytes: the first drive of
// "boot: order=…" that is a disk (not a CD-ROM), else the first of scsi0,
// virtio0, sata0, ide0 that is.
func (c vmConfig) bootDisk() (string, int64, bool) {
	var order []string
	if o, ok := strings.CutPrefix(c["boot"], "order="); ok {
		order = strings.Split(o, ";")
	}
	for _, k := range append(order, "scsi0", "virtio0", "sata0", "ide0") {
		if d, ok := c[k]; ok && diskKeyPattern.MatchString(k) && !isCDROM(d) {
			return k, driveSize(d), true
		}
	}
	return "", 0, false
}

// isCDROM reports whether a drive value is a CD-ROM (cloud-init drives too).
func isCDROM(drive string) bool {
	parts := strings.Split(drive, ",")
	return slices.Contains(parts[1:], "media=cdrom") || parts[0] == "none" || parts[0] == "cdrom"
}

// driveSize is the size=… option of a drive value in bytes (0 if absent).
func driveSize(drive string) int64 {
	for _, opt := range strings.Split(drive, ",")[1:] {
		if v, ok := strings.CutPrefix(opt, "size="); ok {
			return parseSize(v)
		}
	}
	return 0
}

// sizeUnits are PVE's disk size suffixes.
var sizeUnits = map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}

// parseSize reads "10G", "512M", "1.5T" or plain bytes (0 when malformed).
func parseSize(v string) int64 {
	mult := int64(1)
	if n := len(v); n > 0 {
		if m, ok := sizeUnits[v[n-1]]; ok {
			mult, v = m, v[:n-1]
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0
	}
	return int64(f * float64(mult))
}

// withBridge is a net value ("virtio=BC:24:…,bridge=vmbr0,firewall=1")
// attached to bridge, keeping its model, MAC and other options; an empty
// value becomes "virtio,bridge=<bridge>".
func withBridge(net, bridge string) string {
	if net == "" {
		return "virtio,bridge=" + bridge
	}
	parts := strings.Split(net, ",")
	for i, p := range parts[1:] {
		if strings.HasPrefix(p, "bridge=") {
			parts[i+1] = "bridge=" + bridge
			return strings.Join(parts, ",")
		}
	}
	return strings.Join(append(parts, "bridge="+bridge), ",")
}

// withUserVolume is a cicustom value whose user= part is volume, keeping
// its other parts (network=, meta=, vendor=).
func withUserVolume(cicustom, volume string) string {
	parts := []string{"user=" + volume}
	for _, p := range strings.Split(cicustom, ",") {
		if p != "" && !strings.HasPrefix(p, "user=") {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ",")
}

// userVolume is the user= part of a cicustom value ("" when none).
func userVolume(cicustom string) string {
	for _, p := range strings.Split(cicustom, ",") {
		if v, ok := strings.CutPrefix(p, "user="); ok {
			return v
		}
	}
	return ""
}

// atoiOr parses s, returning def when it is not a number.
func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// netKeyPattern matches the config keys of network devices.
var netKeyPattern = regexp.MustCompile(`^net\d+$`)

// clonedConfig is the config a full clone of a template whose config is
// tpl has once its task ended OK, called name with description desc, as
// PVE's clone makes it: the template's keys (tags, ipconfig0, cicustom,
// sizes, drives under their keys and sizes) without template, lock,
// digest and unusedN, with name and description. PVE gives every netN of
// the clone a new MAC, which only a read would tell: a netN here has none,
// so configure, when it rewrites one, sends it without a MAC and PVE
// makes another (PVE generates a missing MAC on create and on update).
// So configure needs no GET …/config after a clone: the one read before
// it, which confirmed the template, says it all.
func clonedConfig(tpl vmConfig, name, desc string) vmConfig {
	out := make(vmConfig, len(tpl))
	for k, v := range tpl {
		switch {
		case k == "template" || k == "lock" || k == "digest" || strings.HasPrefix(k, "unused"):
		case netKeyPattern.MatchString(k):
			out[k] = withoutMAC(v)
		default:
			out[k] = v
		}
	}
	out["name"], out["description"] = name, desc
	return out
}

// withoutMAC is a net value without its MAC: "virtio=BC:24:11:…,bridge=
// vmbr0" gives "virtio,bridge=vmbr0"; a macaddr= option goes too.
func withoutMAC(net string) string {
	parts := strings.Split(net, ",")
	model, _, _ := strings.Cut(parts[0], "=")
	if model == "model" { // the long form: model=virtio,macaddr=…
		model = parts[0]
	}
	out := []string{model}
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "macaddr=") {
			out = append(out, p)
		}
	}
	return strings.Join(out, ",")
}
