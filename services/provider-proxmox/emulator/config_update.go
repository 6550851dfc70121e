package emulator

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// configKeyPattern matches the config keys the emulator accepts in
// POST/PUT …/config (a subset of PVE's qemu-server schema).
var configKeyPattern = regexp.MustCompile(`^(?:` +
	`name|description|tags|cores|sockets|vcpus|memory|balloon|shares|cpu|cpulimit|cpuunits|` +
	`ostype|machine|bios|boot|bootdisk|scsihw|vga|agent|onboot|startup|protection|hotplug|` +
	`kvm|acpi|tablet|localtime|keyboard|smbios1|vmgenid|args|hookscript|affinity|watchdog|` +
	`ciuser|cipassword|citype|ciupgrade|cicustom|sshkeys|nameserver|searchdomain|` +
	`lock|template|efidisk0|tpmstate0|rng0|audio0|` +
	`(?:scsi|virtio|sata|ide|net|ipconfig|serial|usb|hostpci|unused|numa|parallel)\d+|numa` +
	`)$`)

// metaParams are config-call parameters that are not config keys.
var metaParams = map[string]bool{
	"delete": true, "digest": true, "skiplock": true, "revert": true,
	"background_delay": true, "force": true,
}

// boolKeys are config keys of PVE type boolean, stored as 1/0.
var boolKeys = map[string]bool{
	"onboot": true, "numa": true, "protection": true, "kvm": true, "acpi": true,
	"tablet": true, "localtime": true, "template": true,
}

// intKeys are config keys of PVE type integer with their bounds.
var intKeys = map[string][2]int{
	"cores": {1, 1024}, "sockets": {1, 4}, "vcpus": {1, 4096}, "balloon": {0, 1 << 30},
	"cpuunits": {1, 262144}, "shares": {0, 50000},
}

// dnsNamePattern is PVE's dns-name format, used for "name".
var dnsNamePattern = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)

// allocPattern is a drive value asking PVE to allocate a new volume:
// "{storage}:{size in GiB}[,options]".
var allocPattern = regexp.MustCompile(`^([a-zA-Z0-9][a-zA-Z0-9\-_.]*):(\d+(?:\.\d+)?)((?:,.*)?)$`)

// maxDescription is PVE's limit on the description's length.
const maxDescription = 8192

// configUpdate is a validated POST/PUT …/config request.
type configUpdate struct {
	set      map[string]string
	del      []string
	digest   string
	skiplock bool
}

// parseConfigUpdate validates config parameters the way PVE's schema does:
// every bad parameter is reported in one 400.
func parseConfigUpdate(p params) (*configUpdate, *apiError) {
	u := &configUpdate{set: map[string]string{}, digest: p["digest"]}
	errs := map[string]string{}
	for k, val := range p {
		if metaParams[k] {
			continue
		}
		if !configKeyPattern.MatchString(k) {
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
			continue
		}
		norm, msg := normalizeConfigValue(k, val)
		if msg != "" {
			errs[k] = msg
			continue
		}
		u.set[k] = norm
	}
	skip, _, err := p.boolParam("skiplock")
	if err != nil {
		maps.Copy(errs, err.errors)
	}
	u.skiplock = skip
	for _, k := range strings.FieldsFunc(p["delete"], func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		if !configKeyPattern.MatchString(k) {
			errs["delete"] = fmt.Sprintf("invalid format - unknown option '%s'", k)
			continue
		}
		if _, both := u.set[k]; both {
			errs["delete"] = fmt.Sprintf("option '%s' can't be set and deleted at the same time", k)
			continue
		}
		u.del = append(u.del, k)
	}
	if len(errs) > 0 {
		return nil, errParams(errs)
	}
	return u, nil
}

// normalizeConfigValue checks one config value and returns its stored form,
// or an error message for the 400 errors map.
func normalizeConfigValue(key, val string) (string, string) {
	switch {
	case boolKeys[key]:
		b, _, err := params{key: val}.boolParam(key)
		if err != nil {
			return "", err.errors[key]
		}
		if b {
			return "1", ""
		}
		return "0", ""
	case key == "memory":
		n := strings.TrimPrefix(strings.Split(val, ",")[0], "current=")
		mib, err := strconv.Atoi(n)
		if err != nil {
			return "", fmt.Sprintf("invalid format - type check ('integer') failed - got '%s'", n)
		}
		if mib < 16 {
			return "", "invalid format - value must have a minimum value of 16"
		}
		return val, ""
	case netKeyPattern.MatchString(key):
		if msg := checkNet(val); msg != "" {
			return "", msg
		}
	case key == "name":
		if !dnsNamePattern.MatchString(val) {
			return "", "invalid format - value does not look like a valid DNS name"
		}
	case key == "tags":
		tags, err := NormalizeTags(val)
		if err != nil {
			return "", err.Error()
		}
		return tags, ""
	case key == "description":
		if len(val) > maxDescription {
			return "", fmt.Sprintf("value may only be %d characters long", maxDescription)
		}
		// Guess: PVE keeps the description as comment lines in the config
		// file and trailing white space does not survive the round trip.
		return strings.TrimRight(val, " \t\r\n"), ""
	}
	if b, ok := intKeys[key]; ok {
		_, _, err := params{key: val}.intParam(key, b[0], b[1])
		if err != nil {
			return "", err.errors[key]
		}
	}
	return val, ""
}

// errDigest is PVE's reply to a stale digest.
//
//nolint:staticcheck // PVE's text, verbatim, punctuation and all
var errDigest = errors.New("detected modified configuration - file changed by other user? Try again.")

// applyConfigUpdate writes u into v's config. Drive values of the form
// "{storage}:{GiB}" allocate a new volume.
func (e *Emulator) applyConfigUpdate(v *vm, u *configUpdate) error {
	if u.digest != "" && u.digest != v.digest() {
		return errDigest
	}
	keys := make([]string, 0, len(u.set))
	for k := range u.set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		val := u.set[k]
		if diskKeyPattern.MatchString(k) {
			var err error
			if val, err = e.allocateDrive(v, val); err != nil {
				return err
			}
		}
		if netKeyPattern.MatchString(k) {
			val = withGeneratedMAC(val, e.newMAC)
		}
		if v.pendingLocked(k, val) {
			continue
		}
		v.config[k] = val
	}
	for _, k := range u.del {
		delete(v.config, k)
	}
	return nil
}

// allocateDrive turns "{storage}:{GiB}[,opts]" into a new volume of v, or
// returns other values unchanged.
func (e *Emulator) allocateDrive(v *vm, val string) (string, error) {
	m := allocPattern.FindStringSubmatch(val)
	if m == nil {
		return val, nil
	}
	st, ok := e.findStorage(m[1])
	if !ok {
		return "", fmt.Errorf("storage '%s' does not exist", m[1])
	}
	if !st.onNode(v.node) {
		return "", fmt.Errorf("storage '%s' is not available on node '%s'", m[1], v.node)
	}
	gib, _ := strconv.ParseFloat(m[2], 64)
	vol := fmt.Sprintf("%s:vm-%d-disk-%d%s", m[1], v.id, nextDiskIndex(v), m[3])
	return withDriveSize(vol, int64(gib*float64(1<<30))), nil
}

// nextDiskIndex is the lowest N such that no drive of v is vm-{id}-disk-N.
func nextDiskIndex(v *vm) int {
	for n := 0; ; n++ {
		name := fmt.Sprintf("vm-%d-disk-%d", v.id, n)
		used := false
		for k, d := range v.config {
			if diskKeyPattern.MatchString(k) && volumeName(d) == name {
				used = true
				break
			}
		}
		if !used {
			return n
		}
	}
}

// volumeName is the volume of a drive value without storage and base
// image: "local-lvm:base-9000-disk-0/vm-101-disk-0,size=10G" gives
// "vm-101-disk-0".
func volumeName(drive string) string {
	vol := strings.Split(drive, ",")[0]
	if _, after, ok := strings.Cut(vol, ":"); ok {
		vol = after
	}
	if i := strings.LastIndexByte(vol, '/'); i >= 0 {
		vol = vol[i+1:]
	}
	return vol
}
