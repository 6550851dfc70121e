package proxmox

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Description lines that mark a VM of this system. Values are
// query-escaped, so any key fits on one line.
const (
	descriptionHeader = "Managed by better-compute.io; keep the lines below."
	keyLinePrefix     = "better-compute.io/idempotency-key="
	offerLinePrefix   = "better-compute.io/offer="
	// cloneOfLinePrefix starts the line a clone carries while half-made
	// (from the clone request until configure's last step removes it with
	// the tag): the VMID of the template it was cloned from, which PVE
	// does not record. A create finding a half-made clone checks it (see
	// Create).
	cloneOfLinePrefix = "better-compute.io/clone-of="
)

// ManagedDescription is the description create gives a VM made for the
// idempotency key with offer: a header line, a line
// "better-compute.io/idempotency-key=<key>" and a line
// "better-compute.io/offer=<offer>" (values query-escaped). Tools seeding
// VMs this system should manage write it together with ManagedTag.
func ManagedDescription(key, offer string) string {
	return descriptionHeader + "\n" + keyLinePrefix + url.QueryEscape(key) + "\n" + offerLinePrefix + url.QueryEscape(offer)
}

// withCloneOf is the description desc with a clone-of line naming
// template vmid as its only one (see cloneOfLinePrefix).
func withCloneOf(desc string, vmid int) string {
	return withoutCloneOf(desc) + "\n" + cloneOfLinePrefix + strconv.Itoa(vmid)
}

// withoutCloneOf is the description desc without its clone-of lines.
func withoutCloneOf(desc string) string {
	lines := strings.Split(desc, "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool {
		return strings.HasPrefix(strings.TrimSpace(l), cloneOfLinePrefix)
	}), "\n")
}

// IsManaged reports whether a VM with the tag list tags (any PVE spelling:
// ',', ';' or spaces, any case) and description is one of this system's:
// it carries ManagedTag and its description holds an idempotency key.
func IsManaged(tags, description string) bool {
	_, hasKey := descriptionValue(description, keyLinePrefix)
	return hasKey && hasManagedTag(tags)
}

// descriptionValue is the unescaped value of the first description line
// starting with prefix (surrounding white space ignored).
func descriptionValue(desc, prefix string) (string, bool) {
	for _, line := range strings.Split(desc, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			out, err := url.QueryUnescape(v)
			return out, err == nil && out != ""
		}
	}
	return "", false
}

// parseTags splits a PVE tag list the way PVE reads it: separated by ',',
// ';' or white space, compared case-insensitively (PVE's default), so
// "Prod,Better-Compute" and "a;better-compute" both hold better-compute.
func parseTags(s string) []string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	slices.Sort(fields)
	return slices.Compact(fields)
}

// hasManagedTag reports whether the tag list s holds ManagedTag
// (case-insensitively).
func hasManagedTag(s string) bool { return slices.Contains(parseTags(s), strings.ToLower(ManagedTag)) }

// withTag is the tag list s plus tag, in PVE's stored form (lower-case,
// sorted, ';'-separated).
func withTag(s, tag string) string {
	tags := parseTags(s + ";" + tag)
	return strings.Join(tags, ";")
}

// snippetName is the cloud-init snippet file of a VM made for key: unique
// per VMID and key, so a create never overwrites another key's user data.
func snippetName(vmid int, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "better-compute-" + strconv.Itoa(vmid) + "-" + hex.EncodeToString(sum[:6]) + ".yaml"
}
