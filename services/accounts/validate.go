package accounts

import (
	"fmt"
	"regexp"
	"unicode"
	"unicode/utf8"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Limits of account and pool fields.
const (
	// maxNameLength bounds account and pool names and site ids, in characters.
	maxNameLength = 128
	// maxFlavors bounds the flavors of one pool.
	maxFlavors = 100
)

var (
	// providerIDPattern is the provider id rule of provider.Define; checked
	// before the id becomes a subject token.
	providerIDPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
	flavorNamePattern = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)
)

// checkProviderID refuses a malformed provider id: INVALID_INPUT path provider.
func checkProviderID(id string) error {
	if !providerIDPattern.MatchString(id) {
		return api.InvalidInput("provider",
			"provider must be a provider id: lower-case letters, digits and hyphens, starting with a letter, at most 63 characters")
	}
	return nil
}

// checkName refuses a name (or site id) s that is longer than
// maxNameLength characters, empty when required, not UTF-8, or holds a
// character that is not printable (unicode.IsPrint: control characters
// such as NUL, ESC, CR and LF, and format characters such as the bidi
// override U+202E, which make a listing lie): INVALID_INPUT naming path.
func checkName(path, s string, required bool) error {
	n := utf8.RuneCountInString(s)
	switch {
	case required && n == 0:
		return api.InvalidInput(path, "%s is required", path)
	case n > maxNameLength:
		return api.InvalidInput(path, "%s must be at most %d characters", path, maxNameLength)
	case !utf8.ValidString(s):
		return api.InvalidInput(path, "%s must be UTF-8", path)
	}
	for i, r := range s {
		if !unicode.IsPrint(r) {
			return api.InvalidInput(path,
				"%s holds the unprintable character %U at byte %d: only printable characters (no control or bidi characters)", path, r, i)
		}
	}
	return nil
}

// checkPoolRequest checks everything of a pool create that needs no I/O.
// Errors: INVALID_INPUT naming the first offending field (class, access
// (required for the host classes metal-host and vps-host),
// providerAccountId, agent, name, siteId, flavors, flavors[i].name,
// flavors[i].offerId, flavors[i].image, release.wipe (host classes only),
// access.…).
func checkPoolRequest(in *api.PoolCreateRequest) error {
	if in.Class != api.PoolClassProvider && !api.HostPoolClass(in.Class) {
		return api.InvalidInput("class", "class must be %q, %q or %q", api.PoolClassProvider, api.PoolClassMetalHost, api.PoolClassVPSHost)
	}
	if api.HostPoolClass(in.Class) && in.Access == nil {
		return api.InvalidInput("access", "a pool of class %s needs access: its hosts are bootstrapped and configured over SSH", in.Class)
	}
	if err := checkID(api.PrefixAccount, "providerAccountId", in.ProviderAccountID); err != nil {
		return err
	}
	if in.Agent != api.PoolAgentNone {
		return api.InvalidInput("agent", "agent must be %q for class %q", api.PoolAgentNone, in.Class)
	}
	if err := checkName("name", in.Name, false); err != nil {
		return err
	}
	if err := checkName("siteId", in.SiteID, false); err != nil {
		return err
	}
	if len(in.Flavors) == 0 || len(in.Flavors) > maxFlavors {
		return api.InvalidInput("flavors", "a pool needs 1 to %d flavors", maxFlavors)
	}
	seen := make(map[string]bool, len(in.Flavors))
	for i, f := range in.Flavors {
		p := fmt.Sprintf("flavors[%d]", i)
		imageErr := api.CheckImage(p+".image", f.Image, false)
		switch {
		case !flavorNamePattern.MatchString(f.Name):
			return api.InvalidInput(p+".name", "%s.name must be 1 to 63 lower-case letters, digits and hyphens", p)
		case seen[f.Name]:
			return api.InvalidInput(p+".name", "flavor %q is listed twice", f.Name)
		case f.OfferID == "" || len(f.OfferID) > provider.MaxIDLength:
			return api.InvalidInput(p+".offerId", "%s.offerId is required (at most %d characters)", p, provider.MaxIDLength)
		case imageErr != nil:
			return imageErr
		}
		seen[f.Name] = true
	}
	if err := api.CheckPoolRelease(in.Class, in.Release); err != nil {
		return err
	}
	return api.CheckPoolAccess(in.Access)
}
