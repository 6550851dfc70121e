package api

import (
	"slices"
	"strconv"
	"strings"
)

// Scope is a permission a tenant credential carries (issue 21): which verbs
// of its tenant the credential may call. nats-server enforces scopes: the
// credential's publish permissions are derived from them (pkg/natsauth), so
// a service never trusts a claim. A scope always covers one tenant only.
type Scope string

// The scopes of tenant credentials.
const (
	// ScopeSecretsManage: secrets.put, secrets.list and secrets.delete.
	ScopeSecretsManage Scope = "compute:secrets:manage"
	// ScopeAccountsManage: every accounts verb (offers included) and the
	// providers verbs (list, describe) one needs to write an account.
	ScopeAccountsManage Scope = "compute:accounts:manage"
	// ScopePoolsManage: every pools verb.
	ScopePoolsManage Scope = "compute:pools:manage"
	// ScopeInstancesManage: instances.create, delete, power, reinstall,
	// update, exec and logs (a machine's logs may echo what its user data wrote);
	// it implies ScopeInstancesRead.
	ScopeInstancesManage Scope = "compute:instances:manage"
	// ScopeInstancesRead: instances.get and instances.list.
	ScopeInstancesRead Scope = "compute:instances:read"
	// ScopeAdmin implies every other scope of the tenant.
	ScopeAdmin Scope = "compute:admin"
)

// Scopes lists every scope, in the order the docs list them.
var Scopes = []Scope{ScopeSecretsManage, ScopeAccountsManage, ScopePoolsManage, ScopeInstancesManage,
	ScopeInstancesRead, ScopeAdmin}

// CommandVerb is one verb of the public API, compute.v1.<tenant>.<Resource>.<Verb>,
// and the scope a credential needs to call it.
type CommandVerb struct {
	Resource, Verb string
	Scope          Scope
}

// Verbs is the table of every public verb and the scope it needs: the one
// place of that fact. pkg/natsauth derives the SERVICES account's exports,
// the tenant accounts' imports and each credential's publish permissions
// from it; docs/user-guide.md's scope table is checked against it.
var Verbs = []CommandVerb{
	{"secrets", "put", ScopeSecretsManage},
	{"secrets", "list", ScopeSecretsManage},
	{"secrets", "delete", ScopeSecretsManage},
	{"accounts", "create", ScopeAccountsManage},
	{"accounts", "get", ScopeAccountsManage},
	{"accounts", "list", ScopeAccountsManage},
	{"accounts", "update", ScopeAccountsManage},
	{"accounts", "delete", ScopeAccountsManage},
	{"accounts", "offers", ScopeAccountsManage},
	{"providers", "list", ScopeAccountsManage},
	{"providers", "describe", ScopeAccountsManage},
	{"pools", "create", ScopePoolsManage},
	{"pools", "get", ScopePoolsManage},
	{"pools", "list", ScopePoolsManage},
	{"pools", "delete", ScopePoolsManage},
	{"pools", "update", ScopePoolsManage},
	{"pools", "rollback", ScopePoolsManage},
	{"instances", "create", ScopeInstancesManage},
	{"instances", "get", ScopeInstancesRead},
	{"instances", "list", ScopeInstancesRead},
	{"instances", "delete", ScopeInstancesManage},
	{"instances", "power", ScopeInstancesManage},
	{"instances", "reinstall", ScopeInstancesManage},
	{"instances", "exec", ScopeInstancesManage},
	{"instances", "logs", ScopeInstancesManage},
	{"instances", "update", ScopeInstancesManage},
	{"instances", "metrics", ScopeInstancesRead},
	// answered by the reconciler (the sequence is an instance's); it claims
	// and wipes a server of the account: the accounts scope
	{"accounts", "bootstrap", ScopeAccountsManage},
}

// ScopeOf is the scope resource.verb needs, and whether it is a public verb.
func ScopeOf(resource, verb string) (Scope, bool) {
	i := slices.IndexFunc(Verbs, func(v CommandVerb) bool { return v.Resource == resource && v.Verb == verb })
	if i < 0 {
		return "", false
	}
	return Verbs[i].Scope, true
}

// Implies reports whether a credential holding s may call what needs want:
// s itself, ScopeAdmin everything, ScopeInstancesManage ScopeInstancesRead.
func (s Scope) Implies(want Scope) bool {
	return s == want || s == ScopeAdmin || (s == ScopeInstancesManage && want == ScopeInstancesRead)
}

// Allowed lists the verbs a credential holding scopes may call, in Verbs order.
func Allowed(scopes []Scope) []CommandVerb {
	var out []CommandVerb
	for _, v := range Verbs {
		if slices.ContainsFunc(scopes, func(s Scope) bool { return s.Implies(v.Scope) }) {
			out = append(out, v)
		}
	}
	return out
}

// ParseScopes checks a list of scope names (at least one, each one of
// Scopes, no repeats) and returns it sorted in Scopes order. Errors:
// INVALID_INPUT at path ("scopes", or "scopes[i]" for an unknown or repeated
// scope).
func ParseScopes(path string, names []string) ([]Scope, error) {
	if len(names) == 0 {
		return nil, InvalidInput(path, "%s: at least one scope is required (one of %s)", path, scopeList())
	}
	var out []Scope
	for i, n := range names {
		s := Scope(n)
		p := path + "[" + strconv.Itoa(i) + "]"
		if !slices.Contains(Scopes, s) {
			return nil, InvalidInput(p, "%s: %q is not a scope (one of %s)", p, n, scopeList())
		}
		if slices.Contains(out, s) {
			return nil, InvalidInput(p, "%s: scope %q is given twice", p, n)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Scope) int { return slices.Index(Scopes, a) - slices.Index(Scopes, b) })
	return out, nil
}

// AccessDeniedScope is ACCESS_DENIED for a verb refused for lack of its
// scope, naming the scope in details.scope.
func AccessDeniedScope(resource, verb string, scope Scope) *ComputeError {
	e := Errorf(CodeAccessDenied, "%s.%s needs scope %s, which this credential does not hold", resource, verb, scope)
	e.Details.Scope = string(scope)
	return e
}

func scopeList() string {
	names := make([]string, len(Scopes))
	for i, s := range Scopes {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
