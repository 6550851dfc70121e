package emulator

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// ParseTags splits a PVE tag list the way PVE reads the "tags" config key:
// tags may be separated by ',', ';' or white space; empty items are
// skipped. The result is lower-case, sorted and de-duplicated. A tag must
// match PVE's pve-tag format, [a-z0-9_][a-z0-9_+.-]* (case-insensitive),
// otherwise ParseTags returns an error.
//
// Guess: PVE only lower-cases and sorts when the datacenter's tag-style
// says so (case-insensitive and sorted are the defaults); the emulator
// always does.
func ParseTags(s string) ([]string, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || unicode.IsSpace(r)
	})
	tags := make([]string, 0, len(fields))
	for _, f := range fields {
		if !validTag(f) {
			return nil, fmt.Errorf("invalid format - invalid characters in tag '%s'", f)
		}
		tags = append(tags, strings.ToLower(f))
	}
	slices.Sort(tags)
	return slices.Compact(tags), nil
}

// NormalizeTags returns the stored form of a tag list: ParseTags joined with
// ';'. NormalizeTags is idempotent.
func NormalizeTags(s string) (string, error) {
	tags, err := ParseTags(s)
	if err != nil {
		return "", err
	}
	return strings.Join(tags, ";"), nil
}

// validTag reports whether t matches PVE's pve-tag format.
func validTag(t string) bool {
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case i > 0 && (c == '-' || c == '+' || c == '.'):
		default:
			return false
		}
	}
	return t != ""
}
