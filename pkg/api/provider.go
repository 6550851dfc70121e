package api

import (
	"encoding/json"
	"time"
)

// Internal requests and replies of compute.internal.provider.<id>.<verb> and
// compute.internal.secrets.resolve.

// ProviderAccount is the part of an account a provider call carries: the
// tenant (for scoped secret resolution), the id and version (for the client
// cache) and the config (secret references, never values).
type ProviderAccount struct {
	ID       string         `json:"id"`
	TenantID string         `json:"tenantId"`
	Version  int64          `json:"version"`
	Config   map[string]any `json:"config"`
}

// ManifestField describes one account config field of a provider. Type is
// one of string, secret, option, int, bool, list, object. Options lists the
// choices of an option; Fields the members of an object; Item the element of
// a list. Min and Max bound an int.
type ManifestField struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Description string          `json:"description,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Default     any             `json:"default,omitempty"`
	Options     []string        `json:"options,omitempty"`
	Min         *int64          `json:"min,omitempty"`
	Max         *int64          `json:"max,omitempty"`
	Fields      []ManifestField `json:"fields,omitempty"`
	Item        *ManifestField  `json:"item,omitempty"`
}

// ProviderDescription answers describe: the kind of extension ("provider"),
// the definition without its code, the manifest, and the same manifest as a
// JSON Schema (2020-12) document.
type ProviderDescription struct {
	Extension    string          `json:"extension"`
	ID           string          `json:"id"`
	Version      string          `json:"version"`
	Provides     []string        `json:"provides"`
	Capabilities []string        `json:"capabilities"`
	Manifest     []ManifestField `json:"manifest"`
	ConfigSchema json.RawMessage `json:"configSchema"`
}

// ProviderOffersRequest asks for offers (offers).
type ProviderOffersRequest struct {
	Account ProviderAccount `json:"account"`
	Query   OfferQuery      `json:"query"`
}

// MachineSpec is what create makes: a name (made hostname-safe by the
// provider), an offer id, an image, optional region, user data and SSH keys.
type MachineSpec struct {
	Name     string   `json:"name"`
	OfferID  string   `json:"offerId"`
	Image    string   `json:"image"`
	Region   string   `json:"region,omitempty"`
	UserData string   `json:"userData,omitempty"`
	SSHKeys  []string `json:"sshKeys,omitempty"`
	// Labels are the instance's labels, to propagate to the machine.
	Labels map[string]string `json:"labels,omitempty"`
	// PoolID names the pool the machine belongs to (placement groups are
	// kept per pool).
	PoolID string `json:"poolId,omitempty"`
	// Storage is the flavor's storage (Flavor.Storage).
	Storage string `json:"storage,omitempty"`
	// Network and Placement are the pool's; Address the static address
	// allocated to this machine from Network.Addresses.
	Network   *PoolNetwork   `json:"network,omitempty"`
	Placement *PoolPlacement `json:"placement,omitempty"`
	Address   *StaticAddress `json:"address,omitempty"`
}

// ProviderCreateRequest creates a machine (create). The same IdempotencyKey
// always names the same machine. FirstAttempt is the caller's guarantee that
// no create with this key was ever sent before (it records each attempt
// before sending it): a provider may then skip looking the key up, an API
// call saved, as long as it still resolves concurrent creates of one key.
type ProviderCreateRequest struct {
	Account        ProviderAccount `json:"account"`
	IdempotencyKey string          `json:"idempotencyKey"`
	Machine        MachineSpec     `json:"machine"`
	FirstAttempt   bool            `json:"firstAttempt,omitempty"`
}

// ProviderMachineRequest names one machine (get, delete).
type ProviderMachineRequest struct {
	Account ProviderAccount `json:"account"`
	// ID is the machine's provider id. A delete may leave it empty and name
	// IdempotencyKey instead: every machine carrying the key, finished or
	// half-made, is deleted (capability delete.byKey; NOT_FOUND when no
	// machine carries the key). Without either: INVALID_INPUT naming id.
	ID string `json:"id"`
	// IdempotencyKey, when set, is the key the caller's machine carries:
	// a machine with this id carrying another key is not the caller's (its
	// id was reused) and is treated as absent (NOT_FOUND), never touched.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// ProviderGetReply answers get; Machine is null when the machine is absent.
type ProviderGetReply struct {
	Machine *ExternalMachine `json:"machine"`
}

// ProviderPowerRequest asks for a power action (power).
type ProviderPowerRequest struct {
	Account ProviderAccount `json:"account"`
	ID      string          `json:"id"`
	Action  PowerAction     `json:"action"`
	// IdempotencyKey, when set, is the key the caller's machine carries:
	// a machine with this id carrying another key is not the caller's (its
	// id was reused) and is treated as absent (NOT_FOUND), never touched.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// ProviderReinstallRequest reinstalls a machine with Image (reinstall).
type ProviderReinstallRequest struct {
	Account ProviderAccount `json:"account"`
	ID      string          `json:"id"`
	Image   string          `json:"image"`
	// IdempotencyKey, when set, is the key the caller's machine carries:
	// a machine with this id carrying another key is not the caller's (its
	// id was reused) and is treated as absent (NOT_FOUND), never touched.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// ProviderListRequest pages through the managed machines of an account (list).
type ProviderListRequest struct {
	Account ProviderAccount `json:"account"`
	Limit   int             `json:"limit,omitempty"`
	Cursor  string          `json:"cursor,omitempty"`
}

// SecretResolveRequest asks the secrets service for a reference's value on
// behalf of a call for an account of TenantID.
type SecretResolveRequest struct {
	TenantID string `json:"tenantId"`
	Ref      string `json:"ref"`
}

// SecretResolveReply carries a resolved value. It only ever travels on
// compute.internal.secrets.resolve.
type SecretResolveReply struct {
	Value string `json:"value"`
}

// Empty is the reply of calls that answer nothing but success.
type Empty struct{}

// RateLimit is a provider API's request budget as it last reported it:
// Remaining requests now, refilled at RefillPerSecond up to Limit, full
// again at ResetAt. A Remaining of 0 closes the budget until ResetAt,
// whatever the refill rate: an API may refuse everything until then.
// Providers report it on replies, failures (a 429) included; the
// reconciler paces its calls to each account with it.
type RateLimit struct {
	Limit           int       `json:"limit"`
	Remaining       int       `json:"remaining"`
	RefillPerSecond float64   `json:"refillPerSecond"`
	ResetAt         time.Time `json:"resetAt"`
}
