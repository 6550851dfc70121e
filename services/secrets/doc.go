// Package secrets is the secrets service: it stores tenant credentials sealed
// at rest and hands them to providers by reference, never to tenants.
//
// Public, tenant-scoped subjects (compute.v1.<tenant>.secrets.<verb>):
//
//	put     api.SecretPutRequest -> api.Secret (metadata and the secret:// reference)
//	list    api.ListRequest      -> api.List[api.Secret] (metadata only)
//	delete  api.IDRequest        -> api.Deleted (refused while an account's config
//	        or a pool's access.privateKey names the secret)
//
// No public subject ever returns a value. Internal subjects (services only):
//
//	compute.internal.secrets.resolve  api.SecretResolveRequest -> api.SecretResolveReply
//	compute.internal.secrets.check    api.SecretResolveRequest -> api.Empty (same checks, no value)
//	compute.internal.secrets.rekey    RekeyRequest -> RekeyReply (admin only, see rekey)
//
// A broker routes each reference to the Store of its scheme, for the
// schemes configured (Options.Stores, ParseStores; by default secret://
// only, a configured list replaces the default): secret:// to the sealed
// local store (KV bucket compute_secrets, key <tenant>.<secretId>,
// AES-256-GCM via package seal, the reference bound as additional data),
// env:// to the service's environment and vault:// to HashiCorp Vault KV v2
// (NewVaultStore), both for the tenants their StoreConfig lists (default
// "root"): the platform's environment and Vault token are not the tenants'.
// A scheme without a store is INVALID_INPUT at check and UNSUPPORTED at
// resolve.
//
// Besides tenant records the bucket holds one key check record per seal key
// id (key _keycheck.<keyId>, never a valid tenant prefix), written before
// the first value sealed with that key; Start compares every such record
// with the keyring, so a wrong or missing key fails at start-up without
// decrypting any secret. A rekey re-seals every value with the current key
// and then marks the other keys' records retired: a retired key may leave
// the key file, and no replica seals with it again.
package secrets
