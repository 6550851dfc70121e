package proxmox

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxVMNameLength is the longest name vmName returns (one DNS label).
const maxVMNameLength = 63

// vmName turns a machine name into a PVE VM name (a DNS label): lower
// case, every run of characters outside [a-z0-9] becomes one hyphen, no
// hyphen at either end, at most 63 characters ("inst_01JD…" →
// "inst-01jd…"). A longer name keeps its first 54 characters and ends in
// "-" and 8 hex digits of the SHA-256 of the whole input; a name without
// letters or digits becomes "vm".
func vmName(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
			continue
		}
		hyphen = true
	}
	out := b.String()
	if out == "" {
		return "vm"
	}
	if len(out) > maxVMNameLength {
		sum := sha256.Sum256([]byte(name))
		out = strings.TrimRight(out[:maxVMNameLength-9], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return out
}
