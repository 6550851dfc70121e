package api

// Public requests and replies (compute.v1.<tenant>.<resource>.<verb>). A body's
// TenantID is optional; when present it must equal the subject's tenant.

// SecretPutRequest stores a credential (secrets.put). A repeated put with the
// same IdempotencyKey and value answers the same secret.
type SecretPutRequest struct {
	TenantID       string `json:"tenantId,omitempty"`
	Name           string `json:"name"`
	Value          string `json:"value"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// MaxIdempotencyKeyLength bounds a request's idempotency key, in bytes.
const MaxIdempotencyKeyLength = 255

// CheckIdempotencyKey checks a request's idempotency key (empty: none):
// at most MaxIdempotencyKeyLength bytes. Error: INVALID_INPUT at
// idempotencyKey; the message never quotes the key.
func CheckIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKeyLength {
		return InvalidInput("idempotencyKey", "idempotencyKey is longer than %d characters", MaxIdempotencyKeyLength)
	}
	return nil
}

// IDRequest names one record (get, delete).
type IDRequest struct {
	TenantID string `json:"tenantId,omitempty"`
	ID       string `json:"id"`
}

// ListRequest pages through records: at most Limit (default 100, max 1000)
// after Cursor (the NextCursor of the previous page).
type ListRequest struct {
	TenantID string `json:"tenantId,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	Cursor   string `json:"cursor,omitempty"`
}

// List is one page of records; NextCursor is empty on the last page.
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// Deleted answers a successful delete.
type Deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// AccountCreateRequest registers a provider account (accounts.create).
type AccountCreateRequest struct {
	TenantID string         `json:"tenantId,omitempty"`
	Provider string         `json:"provider"`
	Name     string         `json:"name"`
	Config   map[string]any `json:"config"`
}

// AccountUpdateRequest changes an account's name or config (accounts.update),
// only if Version is still the stored version.
type AccountUpdateRequest struct {
	TenantID string         `json:"tenantId,omitempty"`
	ID       string         `json:"id"`
	Version  int64          `json:"version"`
	Name     string         `json:"name,omitempty"`
	Config   map[string]any `json:"config,omitempty"`
}

// AccountOffersRequest asks an account's provider for offers (accounts.offers).
type AccountOffersRequest struct {
	TenantID string `json:"tenantId,omitempty"`
	ID       string `json:"id"`
	// PoolID names a pool of the account: the offers' availability is
	// then for where that pool's creates place (its placement becomes
	// Query.Placement, which must then be unset).
	PoolID string     `json:"poolId,omitempty"`
	Query  OfferQuery `json:"query"`
}

// PoolCreateRequest creates a pool (pools.create).
type PoolCreateRequest struct {
	TenantID          string   `json:"tenantId,omitempty"`
	Name              string   `json:"name,omitempty"`
	SiteID            string   `json:"siteId,omitempty"`
	Class             string   `json:"class"`
	ProviderAccountID string   `json:"providerAccountId"`
	Agent             string   `json:"agent"`
	Flavors           []Flavor `json:"flavors"`
	// Access lets the platform reach the pool's machines over SSH (see
	// PoolAccess).
	Access *PoolAccess `json:"access,omitempty"`
	// Network and Placement: see Pool.
	Network   *PoolNetwork   `json:"network,omitempty"`
	Placement *PoolPlacement `json:"placement,omitempty"`
	// Release: see Pool (host pool classes only).
	Release *PoolRelease `json:"release,omitempty"`
}

// InstanceCreateRequest asks for a machine (instances.create). Image defaults
// to the flavor's image; Power to "on". A repeated create with the same
// IdempotencyKey answers the instance the first one made.
type InstanceCreateRequest struct {
	TenantID string   `json:"tenantId,omitempty"`
	PoolID   string   `json:"poolId"`
	Flavor   string   `json:"flavor"`
	Image    string   `json:"image,omitempty"`
	Name     string   `json:"name,omitempty"`
	UserData string   `json:"userData,omitempty"`
	SSHKeys  []string `json:"sshKeys,omitempty"`
	// Labels are the instance's labels (see Instance.Labels).
	Labels         map[string]string `json:"labels,omitempty"`
	Power          Power             `json:"power,omitempty"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty"`
}

// InstanceListRequest pages through instances, optionally of one pool or phase.
type InstanceListRequest struct {
	ListRequest
	PoolID string `json:"poolId,omitempty"`
	Phase  Phase  `json:"phase,omitempty"`
	// Selector is a label selector (Kubernetes syntax: "a=b,c!=d,e in
	// (f,g),h notin (i),j,!k"); only instances whose labels match it are
	// listed.
	Selector string `json:"selector,omitempty"`
}

// InstanceUpdateRequest changes an instance's desired spec
// (instances.update): each change bumps the generation and the reconciler
// converges. Flavor is a resize, Image a reinstall; an empty Flavor or
// Image is unchanged. Labels replace the instance's labels whole: absent
// (null) leaves them unchanged, {} removes them all. Version, when set, is
// the record version the caller read: another version is CONFLICT.
type InstanceUpdateRequest struct {
	TenantID string            `json:"tenantId,omitempty"`
	ID       string            `json:"id"`
	Version  int64             `json:"version,omitempty"`
	Flavor   string            `json:"flavor,omitempty"`
	Image    string            `json:"image,omitempty"`
	Labels   map[string]string `json:"labels"`
}

// InstancePowerRequest asks for a power action (instances.power): on and off
// set the desired power; the others are one-shot operations.
type InstancePowerRequest struct {
	TenantID string      `json:"tenantId,omitempty"`
	ID       string      `json:"id"`
	Action   PowerAction `json:"action"`
}

// InstanceReinstallRequest reinstalls an instance with Image (instances.reinstall).
type InstanceReinstallRequest struct {
	TenantID string `json:"tenantId,omitempty"`
	ID       string `json:"id"`
	Image    string `json:"image"`
}

// ProviderInfo is the tenant view of a provider (providers.list,
// providers.describe): its id and version, its capabilities, and the
// config fields an account of it takes (Type "secret" marks a field that
// holds a secret reference; Default is applied when the field is absent).
type ProviderInfo struct {
	ID           string          `json:"id"`
	Version      string          `json:"version"`
	Capabilities []string        `json:"capabilities"`
	Fields       []ManifestField `json:"fields"`
}
