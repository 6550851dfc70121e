package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxHostnameLabelLength is the longest name HostnameLabel returns (one DNS
// label).
const MaxHostnameLabelLength = 63

// HostnameLabel turns a machine name into a hostname-safe name (one DNS
// label): lower case, every run of characters outside [a-z0-9] becomes one
// hyphen, no hyphen at either end, at most MaxHostnameLabelLength
// characters ("inst_01JD…" → "inst-01jd…"). A longer name keeps its first
// 54 characters and ends in "-" and 8 hex digits of the SHA-256 of the
// whole input, so distinct long names stay distinct. A name without letters
// or digits becomes fallback, which must itself be such a label.
func HostnameLabel(name, fallback string) string {
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
		return fallback
	}
	if len(out) > MaxHostnameLabelLength {
		sum := sha256.Sum256([]byte(name))
		out = strings.TrimRight(out[:MaxHostnameLabelLength-9], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return out
}
