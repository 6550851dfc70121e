package api

import (
	"crypto/rand"
	"regexp"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// ID prefixes of DESIGN.md: every record id is a prefix and a ULID.
const (
	PrefixSecret    = "sec_"
	PrefixAccount   = "pacct_"
	PrefixPool      = "pool_"
	PrefixInstance  = "inst_"
	PrefixOperation = "op_"
	PrefixEvent     = "evt_"
)

// NewID returns prefix followed by a new lower-case ULID (26 characters,
// time-ordered, 80 random bits), e.g. "inst_01jd…".
func NewID(prefix string) string {
	return prefix + strings.ToLower(ulid.MustNew(ulid.Timestamp(time.Now()), rand.Reader).String())
}

var idPattern = regexp.MustCompile(`^[a-z]+_[0-9a-z]{26}$`)

// ValidID reports whether id has the given prefix and a ULID body. Ids are
// also KV key tokens, so this check keeps dots and wildcards out of keys.
func ValidID(prefix, id string) bool {
	return strings.HasPrefix(id, prefix) && idPattern.MatchString(id)
}

var tenantPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidTenant reports whether tenant is a NATS-token-safe tenant id:
// [a-z0-9][a-z0-9-]{0,62}, no dots or wildcards.
func ValidTenant(tenant string) bool { return tenantPattern.MatchString(tenant) }
