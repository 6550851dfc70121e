package api

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Label limits (Kubernetes' rules; Hetzner Cloud's labels follow the same
// ones, so every valid label is a valid Hetzner label).
const (
	// MaxLabels is how many labels an instance may carry.
	MaxLabels = 64
	// MaxLabelNameLength bounds a key's name part and a value.
	MaxLabelNameLength = 63
	// MaxLabelPrefixLength bounds a key's prefix (a DNS subdomain).
	MaxLabelPrefixLength = 253
	// SystemLabelPrefix is the key prefix of the labels the platform puts
	// on machines itself (the Hetzner provider's managed and
	// idempotency-key labels, services/provider-hetzner
	// DefaultLabelPrefix): a user label may not use it, nor a subdomain of
	// it ("x.better-compute.io/…").
	SystemLabelPrefix = "better-compute.io"
)

// ReservedLabelKeys are label keys without a prefix that the platform
// itself sets on machines: EmulatorSSHPortKey (the emulators' SSH port
// label). A user label may not use them.
var ReservedLabelKeys = []string{EmulatorSSHPortKey}

var (
	// labelNamePattern is a key's name part and a non-empty value: 1-63
	// characters of [A-Za-z0-9._-], starting and ending with a letter or
	// digit.
	labelNamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)
	// dnsLabelPattern is one dot-separated part of a DNS subdomain.
	dnsLabelPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// ValidateLabels checks labels by Kubernetes' rules: at most MaxLabels;
// each key an optional prefix (a lower-case DNS subdomain of at most 253
// characters) and "/", then a name of 1-63 characters of [A-Za-z0-9._-]
// starting and ending with a letter or digit; each value empty or such a
// name. Keys under SystemLabelPrefix and the ReservedLabelKeys are the
// platform's. Errors: INVALID_INPUT with details.path path (too many
// labels) or "<path>[<key>]" (the first offending key, in key order).
func ValidateLabels(path string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return InvalidInput(path, "%s has %d labels; at most %d are allowed", path, len(labels), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		p := fmt.Sprintf("%s[%s]", path, k)
		if err := CheckLabelKey(k); err != nil {
			return InvalidInput(p, "label key %q: %v", k, err)
		}
		if err := CheckLabelValue(labels[k]); err != nil {
			return InvalidInput(p, "label %q: %v", k, err)
		}
	}
	return nil
}

// CheckLabelKey reports what is wrong with a label key a user sets (nil
// when it is valid, see ValidateLabels), as a plain error for a caller to
// wrap: its syntax (CheckLabelKeySyntax), then the platform's keys.
func CheckLabelKey(key string) error {
	if err := CheckLabelKeySyntax(key); err != nil {
		return err
	}
	if IsSystemLabel(SystemLabelPrefix, key) {
		return fmt.Errorf("key %s is reserved for the platform's own labels (prefix %s/, keys %v)", key, SystemLabelPrefix,
			ReservedLabelKeys)
	}
	return nil
}

// CheckLabelKeySyntax reports what is wrong with the syntax of a label
// key (an optional lower-case DNS-subdomain prefix and "/", then a name):
// nil when it is well-formed, reserved or not.
func CheckLabelKeySyntax(key string) error {
	prefix, name, prefixed := strings.Cut(key, "/")
	if !prefixed {
		prefix, name = "", key
	}
	switch {
	case prefixed && (prefix == "" || len(prefix) > MaxLabelPrefixLength || !isDNSSubdomain(prefix)):
		return fmt.Errorf("prefix %q must be a lower-case DNS subdomain of at most %d characters", prefix, MaxLabelPrefixLength)
	case !labelNamePattern.MatchString(name):
		return fmt.Errorf("name %q must be 1-%d characters of [A-Za-z0-9._-], starting and ending with a letter or digit",
			name, MaxLabelNameLength)
	}
	return nil
}

// CheckLabelValue reports what is wrong with a label value (nil when it
// is valid: empty, or 1-63 characters of [A-Za-z0-9._-] starting and
// ending with a letter or digit).
func CheckLabelValue(value string) error {
	if value != "" && !labelNamePattern.MatchString(value) {
		return fmt.Errorf("value %q must be empty or 1-%d characters of [A-Za-z0-9._-], starting and ending with a letter or digit",
			value, MaxLabelNameLength)
	}
	return nil
}

// isDNSSubdomain reports whether s is dot-separated DNS labels.
func isDNSSubdomain(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if !dnsLabelPattern.MatchString(part) {
			return false
		}
	}
	return true
}

// IsSystemLabel reports whether key is one of the platform's own label
// keys under prefix (the provider's label prefix, SystemLabelPrefix by
// default), or a ReservedLabelKeys key: such labels are never reported as
// a machine's user labels, and a relabel keeps them.
func IsSystemLabel(prefix, key string) bool {
	p, _, ok := strings.Cut(key, "/")
	if !ok {
		return slices.Contains(ReservedLabelKeys, key)
	}
	return p == prefix || strings.HasSuffix(p, "."+prefix)
}

// ProviderRelabelRequest replaces a machine's user labels (provider verb
// relabel, capability labels): Labels (valid by ValidateLabels; empty
// removes them all) replace every user label of machine ID; the
// provider's system labels stay.
type ProviderRelabelRequest struct {
	Account ProviderAccount   `json:"account"`
	ID      string            `json:"id"`
	Labels  map[string]string `json:"labels"`
	// IdempotencyKey, when set, is the key the caller's machine carries:
	// a machine with this id carrying another key is not the caller's (its
	// id was reused) and is treated as absent (NOT_FOUND), never touched.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}
