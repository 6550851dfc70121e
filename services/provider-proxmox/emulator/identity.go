package emulator

import (
	"fmt"
	"regexp"
	"strings"
)

// newMAC returns a fresh MAC address in Proxmox's BC:24:11 range.
func (e *Emulator) newMAC() string {
	e.macSeq++
	n := e.macSeq
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", byte(n>>16), byte(n>>8), byte(n))
}

// newUUID returns a fresh, deterministic version-4-shaped UUID.
func (e *Emulator) newUUID() string {
	e.macSeq++
	return fmt.Sprintf("e3010000-0000-4000-8000-%012x", e.macSeq)
}

// macPattern matches a MAC address.
var macPattern = regexp.MustCompile(`^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$`)

// withMAC sets the MAC of a net value such as "virtio=BC:24:11:00:00:01,
// bridge=vmbr0" (or "virtio,bridge=vmbr0", which gets one).
func withMAC(net, mac string) string {
	parts := strings.Split(net, ",")
	model, _, _ := strings.Cut(parts[0], "=")
	parts[0] = model + "=" + mac
	return strings.Join(parts, ",")
}

// withGeneratedMAC is net with a MAC from newMAC when it has none (neither
// model=MAC nor a macaddr= option): PVE generates a missing MAC on create
// and on update.
func withGeneratedMAC(net string, newMAC func() string) string {
	if netMAC(net) != "" || strings.Contains(","+net, ",macaddr=") {
		return net
	}
	if model, _, _ := strings.Cut(strings.Split(net, ",")[0], "="); model == "model" {
		return net + ",macaddr=" + newMAC()
	}
	return withMAC(net, newMAC())
}

// netMAC returns the MAC of a net value, or "".
func netMAC(net string) string {
	_, mac, _ := strings.Cut(strings.Split(net, ",")[0], "=")
	if macPattern.MatchString(mac) {
		return mac
	}
	return ""
}

// withSMBIOSUUID replaces or adds the uuid= option of an smbios1 value.
func withSMBIOSUUID(smbios, uuid string) string {
	var parts []string
	for _, p := range strings.Split(smbios, ",") {
		if p != "" && !strings.HasPrefix(p, "uuid=") {
			parts = append(parts, p)
		}
	}
	return strings.Join(append([]string{"uuid=" + uuid}, parts...), ",")
}
