// Package accounts is the accounts service: provider accounts and pools,
// stored in JetStream KV (compute_accounts and compute_pools, key
// "<tenant>.<id>", revision CAS on every write).
//
// Subjects (compute.v1.<tenant>.<resource>.<verb>, micro service "accounts"):
//
//	accounts.create  api.AccountCreateRequest  → api.Account (version 1)
//	accounts.get     api.IDRequest             → api.Account
//	accounts.list    api.ListRequest           → api.List[api.Account]
//	accounts.update  api.AccountUpdateRequest  → api.Account (version + 1)
//	accounts.delete  api.IDRequest             → api.Deleted
//	accounts.offers  api.AccountOffersRequest  → api.List[api.Offer]
//	pools.create     api.PoolCreateRequest     → api.Pool (version 1)
//	pools.get        api.IDRequest             → api.Pool
//	pools.list       api.ListRequest           → api.List[api.Pool]
//	pools.delete     api.IDRequest             → api.Deleted
//	providers.list     api.ListRequest         → api.List[api.ProviderInfo]
//	providers.describe api.IDRequest           → api.ProviderInfo
//
// Account names and pool names are unique per tenant (ALREADY_EXISTS at
// create, and at an account rename); records that already share a name
// keep working. providers.list and providers.describe are the tenant view
// of compute.internal.provider.<id>.describe: config fields (Type "secret"
// for a secret reference, defaults) and capabilities.
//
// An account config is checked against the provider's manifest, fetched with
// compute.internal.provider.<id>.describe and cached for Options.DescribeTTL,
// and every secret reference in it is checked with the secrets service
// (compute.internal.secrets.check) for the request's tenant, so a config that
// cannot work is refused when it is stored, not at first use.
//
// Referential integrity: an account is not deleted while a pool uses it, a
// pool not while an instance uses it. Deletes remove the record only at the
// revision read before scanning for users. A pool create rewrites its account
// unchanged after writing the pool, so a concurrent account delete fails its
// revision check instead of orphaning the pool; writers of instances can do
// the same with the pool record.
package accounts
