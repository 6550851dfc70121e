package api

import "time"

// Tenant states.
const (
	TenantActive  = "active"
	TenantRevoked = "revoked"
)

// TenantLimits are the NATS limits of a tenant's account, enforced by
// nats-server from the account JWT. -1 means no limit.
type TenantLimits struct {
	// Connections open at once across the tenant's credentials (default 100).
	Connections int64 `json:"connections"`
	// Subscriptions of one connection (nats-server counts them per
	// connection; default 1000).
	Subscriptions int64 `json:"subscriptions"`
	// PayloadBytes bounds one message (default 1048576, the server's own).
	PayloadBytes int64 `json:"payloadBytes"`
	// JetStreamBytes is the file storage the account may use; 0 (the
	// default) gives it no JetStream of its own.
	JetStreamBytes int64 `json:"jetStreamBytes"`
}

// DefaultTenantLimits are the limits of a tenant created without any.
var DefaultTenantLimits = TenantLimits{Connections: 100, Subscriptions: 1000, PayloadBytes: 1 << 20}

// TenantQuotas are the tenant's application quotas (0: none), enforced by
// the services from a watch of the tenant records (bus.Quotas; see
// docs/architecture.md, "Tenant quotas"). A refusal names the quota in
// details.limit ("quotas.<field>") with its value in details.quota.
type TenantQuotas struct {
	// Instances of the tenant at once (instances.create beyond:
	// CAPACITY_UNAVAILABLE).
	Instances int64 `json:"instances"`
	// InstancesPerPool of one pool at once (CAPACITY_UNAVAILABLE, path
	// poolId).
	InstancesPerPool int64 `json:"instancesPerPool"`
	// CreatesPerSecond of instances, per reconciler replica (RATE_LIMITED
	// with retryAfterMs).
	CreatesPerSecond int64 `json:"createsPerSecond"`
	// ConcurrentLists running at once, of every resource's list verb, per
	// service replica (RATE_LIMITED with retryAfterMs).
	ConcurrentLists int64 `json:"concurrentLists"`
	// ListsPerSecond of every resource's list verb (pages: each list call
	// answers one), per service replica (RATE_LIMITED with retryAfterMs).
	// It bounds what a tenant's lists cost the service's CPU when each
	// list is quick, which concurrentLists alone does not.
	ListsPerSecond int64 `json:"listsPerSecond"`
}

// TenantCredential is one credential of a tenant: a NATS user of its
// account. Its seed is never stored: it is in the creds file returned once
// by compute.admin.tenants.credentials.
type TenantCredential struct {
	// ID is the user's public nkey (U…).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Scopes the credential holds (its publish permissions).
	Scopes    []Scope    `json:"scopes"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// Tenant is a tenant record of the tenants service (bucket compute_tenants).
type Tenant struct {
	ID string `json:"id"`
	// Account is the public nkey (A…) of the tenant's NATS account.
	Account     string             `json:"account"`
	State       string             `json:"state"` // TenantActive or TenantRevoked
	Limits      TenantLimits       `json:"limits"`
	Quotas      TenantQuotas       `json:"quotas"`
	Credentials []TenantCredential `json:"credentials"`
	CreatedAt   time.Time          `json:"createdAt"`
	RevokedAt   *time.Time         `json:"revokedAt,omitempty"`
	// Version counts the record's writes (1 at creation).
	Version int64 `json:"version"`
}

// TenantCreateRequest creates a tenant (compute.admin.tenants.create).
// Absent limits are DefaultTenantLimits, absent quotas none.
type TenantCreateRequest struct {
	ID     string        `json:"id"`
	Limits *TenantLimits `json:"limits,omitempty"`
	Quotas *TenantQuotas `json:"quotas,omitempty"`
}

// TenantCredentialsRequest mints a credential of tenant ID
// (compute.admin.tenants.credentials) named Name with Scopes.
type TenantCredentialsRequest struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// TenantCredentialsReply is a minted credential and its creds file (JWT and
// seed, secret: the only copy).
type TenantCredentialsReply struct {
	Credential TenantCredential `json:"credential"`
	Creds      string           `json:"creds"`
}

// TenantRevokeRequest revokes tenant ID (every credential, for good) or,
// with Credential, only that credential (compute.admin.tenants.revoke).
type TenantRevokeRequest struct {
	ID         string `json:"id"`
	Credential string `json:"credential,omitempty"`
}
