package hetzner

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"better-compute.io/compute/pkg/provider"
)

// fallbackServerName names a server whose requested name has no usable
// character at all.
const fallbackServerName = "server"

// ServerName turns a machine name into a hostname-safe Hetzner server name
// (see provider.HostnameLabel); a name without letters or digits becomes
// "server".
func ServerName(name string) string {
	return provider.HostnameLabel(name, fallbackServerName)
}

// Label names under the label prefix.
const (
	labelManaged        = "managed"
	labelIdempotencyKey = "idempotency-key"
	// labelPool and labelLocation mark a placement group with the pool
	// and the location it serves.
	labelPool     = "pool"
	labelLocation = "location"
)

// hashedKeyPrefix starts the label value of an idempotency key that cannot
// be a label value as it is.
const hashedKeyPrefix = "sha256-"

// maxLabelValueLength is Hetzner's limit on a label value.
const maxLabelValueLength = 63

// labelValuePattern is a Hetzner label value: up to 63 characters of
// [a-zA-Z0-9._-], starting and ending with a letter or digit.
var labelValuePattern = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,61}[a-zA-Z0-9])?$`)

// KeyLabelValue is the idempotency-key label value of an idempotency key:
// the key itself when it is a valid label value (at most 63 characters of
// [a-zA-Z0-9._-], starting and ending with a letter or digit) and does not
// start with "sha256-"; otherwise "sha256-" and the first 56 hex digits
// (224 bits) of the key's SHA-256, 63 characters in all. Two keys share a
// value only if SHA-256 collides.
func KeyLabelValue(key string) string {
	if labelValuePattern.MatchString(key) && !strings.HasPrefix(key, hashedKeyPrefix) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return (hashedKeyPrefix + hex.EncodeToString(sum[:]))[:maxLabelValueLength]
}

// labels are the label keys of one label prefix.
type labels struct {
	prefix, managed, key, pool, location string
}

func newLabels(prefix string) labels {
	return labels{prefix: prefix, managed: prefix + "/" + labelManaged, key: prefix + "/" + labelIdempotencyKey,
		pool: prefix + "/" + labelPool, location: prefix + "/" + labelLocation}
}

// forKey are the labels of a server made for an idempotency key.
func (l labels) forKey(key string) map[string]string {
	return map[string]string{l.managed: "true", l.key: KeyLabelValue(key)}
}

// managedSelector selects every server this system manages.
func (l labels) managedSelector() string { return l.managed + "=true" }

// keySelector selects the managed server of an idempotency key.
func (l labels) keySelector(key string) string {
	return l.managedSelector() + "," + l.key + "=" + KeyLabelValue(key)
}

// keysSelector selects the managed servers of any of the idempotency
// keys: <managed>=true,<key label> in (<label values>), each value once.
func (l labels) keysSelector(keys []string) string {
	values := make([]string, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if v := KeyLabelValue(k); !seen[v] {
			seen[v] = true
			values = append(values, v)
		}
	}
	return l.managedSelector() + "," + l.key + " in (" + strings.Join(values, ",") + ")"
}

// isManaged reports whether server labels mark a server this system manages.
func (l labels) isManaged(serverLabels map[string]string) bool {
	return serverLabels[l.managed] == "true"
}

// hasKey reports whether server labels carry the idempotency key.
func (l labels) hasKey(serverLabels map[string]string, key string) bool {
	return l.isManaged(serverLabels) && serverLabels[l.key] == KeyLabelValue(key)
}

// reportedKey is the idempotency key a server reports
// (ExternalMachine.IdempotencyKey): key when the server carries it, else
// the server's idempotency-key label value ("" when it has none). A label
// value of a hashed key (sha256-…) never equals a key, so a caller
// expecting another key always sees a mismatch.
func (l labels) reportedKey(serverLabels map[string]string, key string) string {
	if key != "" && l.hasKey(serverLabels, key) {
		return key
	}
	return serverLabels[l.key]
}
