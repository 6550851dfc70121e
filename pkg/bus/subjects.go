package bus

import "strings"

// Subject roots.
const (
	// PublicRoot prefixes every tenant-scoped subject: compute.v1.<tenant>.…
	PublicRoot = "compute.v1"
	// InternalRoot prefixes subjects only services may publish on.
	InternalRoot = "compute.internal"
	// WorkRoot prefixes the reconciler's work queue subjects (AccountWork, Work):
	// compute.work.<tenant>.<accountId>.<instanceId>.
	WorkRoot = "compute.work"
)

// Resources of the public API.
const (
	ResourceSecrets   = "secrets"
	ResourceAccounts  = "accounts"
	ResourcePools     = "pools"
	ResourceInstances = "instances"
	// ResourceProviders is the tenant view of the providers (list, describe).
	ResourceProviders = "providers"
)

// Command is the subject of a public command: compute.v1.<tenant>.<resource>.<verb>.
// Pass "*" as tenant for a service subscription.
func Command(tenant, resource, verb string) string {
	return PublicRoot + "." + tenant + "." + resource + "." + verb
}

// Event is the subject of a published event:
// compute.v1.<tenant>.events.<resource>.<id>.<type>.
func Event(tenant, resource, id, typ string) string {
	return PublicRoot + "." + tenant + ".events." + resource + "." + id + "." + typ
}

// EventsOf is the wildcard subject of every event of one tenant ("*" for all).
func EventsOf(tenant string) string { return PublicRoot + "." + tenant + ".events.>" }

// ResourceProvider is the resource token of the provider subjects.
const ResourceProvider = "provider"

// ProviderCall is the subject of a provider verb:
// compute.internal.provider.<providerId>.<verb>.
func ProviderCall(providerID, verb string) string {
	return InternalRoot + "." + ResourceProvider + "." + providerID + "." + verb
}

// SecretsResolve is the subject providers use to resolve a secret reference.
const SecretsResolve = InternalRoot + ".secrets.resolve"

// SecretsCheck is the subject accounts uses to check that a reference
// resolves for a tenant without receiving its value.
const SecretsCheck = InternalRoot + ".secrets.check"

// Work is the work-queue subject of one instance as reconcilers before
// AccountWork queued it, compute.work.<tenant>.<instanceId>: still
// consumed, no longer published.
func Work(tenant, instanceID string) string { return WorkRoot + "." + tenant + "." + instanceID }

// AccountWork is the work-queue subject of one instance of a pool on
// provider account accountID: compute.work.<tenant>.<accountId>.<instanceId>,
// so that each account's work has a consumer of its own (fair within a
// tenant).
func AccountWork(tenant, accountID, instanceID string) string {
	return WorkRoot + "." + tenant + "." + accountID + "." + instanceID
}

// TenantOf returns the tenant token of a public subject (compute.v1.<tenant>.…),
// or "" when subject is not public.
func TenantOf(subject string) string {
	rest, ok := strings.CutPrefix(subject, PublicRoot+".")
	if !ok {
		return ""
	}
	tenant, _, _ := strings.Cut(rest, ".")
	return tenant
}
