package emulator

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// netKeyPattern matches network device keys.
var netKeyPattern = regexp.MustCompile(`^net\d+$`)

// cloneRequest is a validated clone.
type cloneRequest struct {
	newID       int
	srcName     string
	name        string
	description string
	setDesc     bool
	full        bool
	storage     string // "" keeps each drive's storage
	pool        string
	target      string // node the clone lands on
}

// cloneConfig derives the new VM's config from the source's, as PVE's
// clone does: everything is copied (tags, description, ipconfig*,
// cicustom, agent, …) except template, lock and unused disks; drives get
// new volumes (full: vm-{newid}-disk-N; linked: base volume/vm-{newid}-
// disk-N), NICs new MACs, smbios1 and vmgenid new UUIDs; the name is the
// "name" parameter or "Copy-of-VM-{source name}".
func (e *Emulator) cloneConfig(src map[string]string, req cloneRequest) map[string]string {
	out := make(map[string]string, len(src))
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	disk := 0
	for _, k := range keys {
		val := src[k]
		switch {
		case k == "template" || k == "lock" || k == "name" || strings.HasPrefix(k, "unused"):
		case netKeyPattern.MatchString(k):
			out[k] = withMAC(val, e.newMAC())
		case k == "smbios1":
			out[k] = withSMBIOSUUID(val, e.newUUID())
		case k == "vmgenid":
			out[k] = e.newUUID()
		case diskKeyPattern.MatchString(k) && strings.Contains(volumeName(val), "cloudinit"):
			out[k] = fmt.Sprintf("%s:vm-%d-cloudinit%s", req.driveStorage(val), req.newID, driveOptions(val))
		case diskKeyPattern.MatchString(k) && !isCDROM(val):
			vol := fmt.Sprintf("vm-%d-disk-%d", req.newID, disk)
			disk++
			if !req.full {
				vol = volumeName(val) + "/" + vol
			}
			out[k] = req.driveStorage(val) + ":" + vol + driveOptions(val)
		default:
			out[k] = val
		}
	}
	out["name"] = req.name
	if req.name == "" {
		out["name"] = "Copy-of-VM-" + req.srcName
	}
	if req.setDesc {
		out["description"] = req.description
	}
	if out["description"] == "" {
		delete(out, "description")
	}
	return out
}

// driveStorage is the storage a cloned drive lands on.
func (r cloneRequest) driveStorage(drive string) string {
	if r.storage != "" && r.full {
		return r.storage
	}
	st, _, _ := strings.Cut(strings.Split(drive, ",")[0], ":")
	return st
}

// driveOptions is the ",opt=…" tail of a drive value ("" when none).
func driveOptions(drive string) string {
	if i := strings.IndexByte(drive, ','); i >= 0 {
		return drive[i:]
	}
	return ""
}
