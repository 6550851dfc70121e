package api

import (
	"regexp"
	"strings"
)

// Secret reference schemes.
const (
	SchemeSecret = "secret"
	SchemeEnv    = "env"
	SchemeVault  = "vault"
)

// SecretRef is a parsed secret reference: secret://<tenant>/<secretId>,
// env://NAME or vault://<mount>/<path>#<field>.
type SecretRef struct {
	Scheme string
	// Tenant and ID of a secret:// reference.
	Tenant, ID string
	// Name of an env:// variable.
	Name string
	// Mount, Path and Field of a vault:// KV v2 reference.
	Mount, Path, Field string
}

var (
	envNamePattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	vaultTokenPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
)

// maxRefLength bounds a reference's length in bytes.
const maxRefLength = 512

// LooksLikeSecretRef reports whether s starts with a secret reference scheme
// (secret://, env:// or vault://), valid or not.
func LooksLikeSecretRef(s string) bool {
	for _, p := range []string{SchemeSecret, SchemeEnv, SchemeVault} {
		if strings.HasPrefix(s, p+"://") {
			return true
		}
	}
	return false
}

// ParseSecretRef parses a secret reference. Errors: INVALID_INPUT (path
// empty: callers set the field's path) describing what is wrong, never
// quoting the input (a mistyped value may be a secret itself).
func ParseSecretRef(s string) (SecretRef, error) {
	if len(s) > maxRefLength {
		return SecretRef{}, InvalidInput("", "secret reference longer than %d bytes", maxRefLength)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return SecretRef{}, InvalidInput("", "not a secret reference (want secret://<tenant>/<id>, env://NAME or vault://<mount>/<path>#<field>)")
	}
	switch scheme {
	case SchemeSecret:
		tenant, id, ok := strings.Cut(rest, "/")
		if !ok || !ValidTenant(tenant) || !ValidID(PrefixSecret, id) {
			return SecretRef{}, InvalidInput("", "malformed secret:// reference (want secret://<tenant>/sec_<ulid>)")
		}
		return SecretRef{Scheme: scheme, Tenant: tenant, ID: id}, nil
	case SchemeEnv:
		if !envNamePattern.MatchString(rest) {
			return SecretRef{}, InvalidInput("", "malformed env:// reference (want env://NAME, NAME of letters, digits and _)")
		}
		return SecretRef{Scheme: scheme, Name: rest}, nil
	case SchemeVault:
		loc, field, ok := strings.Cut(rest, "#")
		mount, path, ok2 := strings.Cut(loc, "/")
		if !ok || !ok2 || !vaultTokenPattern.MatchString(mount) || !vaultTokenPattern.MatchString(field) || !validVaultPath(path) {
			return SecretRef{}, InvalidInput("", "malformed vault:// reference (want vault://<mount>/<path>#<field>)")
		}
		return SecretRef{Scheme: scheme, Mount: mount, Path: path, Field: field}, nil
	}
	return SecretRef{}, InvalidInput("", "unknown secret reference scheme (want secret, env or vault)")
}

func validVaultPath(path string) bool {
	if path == "" {
		return false
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." || !vaultTokenPattern.MatchString(seg) {
			return false
		}
	}
	return true
}

// String formats r back into its reference form.
func (r SecretRef) String() string {
	switch r.Scheme {
	case SchemeSecret:
		return SchemeSecret + "://" + r.Tenant + "/" + r.ID
	case SchemeEnv:
		return SchemeEnv + "://" + r.Name
	case SchemeVault:
		return SchemeVault + "://" + r.Mount + "/" + r.Path + "#" + r.Field
	}
	return ""
}
