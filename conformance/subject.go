package conformance

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
)

// DefaultScaleMachines is the inventory size of the scale lane.
const DefaultScaleMachines = 10_000

// Subject is the provider under test and what the program needs to drive
// it. Only ProviderID, NC, Account, OfferID and Image are required; each
// hook left nil makes the behaviours that need it INCOMPLETE when their
// profile is claimed.
type Subject struct {
	// ProviderID is the id the provider serves under:
	// compute.internal.provider.<ProviderID>.<verb>.
	ProviderID string
	// NC is the bus connection every call goes through.
	NC *nats.Conn
	// Account is what every call carries: id, tenant (e.g. "root", whose
	// env:// references the secrets service resolves), version, and the
	// config with secret references only (e.g. {"token":"env://HCLOUD_TOKEN"}).
	Account api.ProviderAccount
	// OfferID and Image are an offer and an image create accepts.
	OfferID, Image string
	// Prefix starts every machine name and idempotency key of the run, so
	// concurrent runs never share keys; "" picks a random one. Lower-case
	// letters, digits and hyphens, at most 16 characters.
	Prefix string
	// Profiles are the claimed profiles (default [core]).
	Profiles []string
	// PowerObservable says get reports the effect of power actions; false
	// relaxes only that observation.
	PowerObservable bool
	// ScaleMachines is the inventory of the scale lane (default
	// DefaultScaleMachines).
	ScaleMachines int
	// SecretValues are the resolved values of the account's secrets: none
	// may appear in a reply, error, log line or report (secrets lane).
	SecretValues []string
	// Logs returns every log line the provider (and the services it uses)
	// wrote so far, for the secrets lane; nil when they cannot be captured.
	Logs func() []byte
	// Faults injects API failures (fault, durable and transport lanes).
	Faults Faults
	// Inventory sees and changes the backend behind the provider's API.
	Inventory Inventory
	// Service kills, restarts and reconnects the provider service.
	Service Service
	// SSH logs in to the machines the provider makes (ssh profile).
	SSH SSH
	// Network sees and prepares the backend's network resources
	// (network profile).
	Network Network
	// NodeNetwork sees how machines are attached and placed on a cluster
	// of nodes, for the bridge, VLAN, static address and node placement
	// behaviours (capabilities network.vlan, network.staticIPv4,
	// placement.nodes).
	NodeNetwork NodeNetwork
}

// SSH reaches the provider's machines over SSH (pkg/access): an
// emulator's machines (pkg/sshemu), or real ones that carry the
// platform's key.
type SSH interface {
	// Login is the user and private key the machines accept.
	Login() (user string, key ssh.Signer)
	// ChangeHostKey makes machine id present another host key from now
	// on, as a reinstalled or impersonated machine would. Errors:
	// ErrNotSupported.
	ChangeHostKey(ctx context.Context, id string) error
}

// ErrNotSupported is what a hook returns for something it cannot do; the
// behaviour asking is then INCOMPLETE, not FAILED.
var ErrNotSupported = errors.New("conformance: the hook cannot do this")

// Faults arms failures in the API behind the provider (an emulator's
// fault API). Ops are provider verbs (provider.VerbCreate, VerbGet,
// VerbList, VerbDelete, VerbOffers): an op's requests are those the
// provider sends to the API to serve that verb (for create, the one that
// makes the machine). Errors: ErrNotSupported, or the adapter's own.
type Faults interface {
	// FailNext makes the next n API requests of op answer HTTP status
	// (429 without a reset header, 5xx, …) without changing state.
	FailNext(ctx context.Context, op string, n, status int) error
	// DropResponseNext makes the next n API requests of op take effect
	// and lose their response (the connection closes).
	DropResponseNext(ctx context.Context, op string, n int) error
	// HangNext makes the next n API requests of op never answer, until
	// the provider gives up on them.
	HangNext(ctx context.Context, op string, n int) error
	// SetLatency delays every API request of op by d (0 removes the delay).
	SetLatency(ctx context.Context, op string, d time.Duration) error
	// FailNextAction makes the next asynchronous provider action doing
	// action (an api.Action* power action or api.ActionReinstall) fail.
	FailNextAction(ctx context.Context, action api.PowerAction) error
	// RateLimit empties the API's rate budget until resetAt, when it is
	// full again; the zero time restores a full budget at once.
	RateLimit(ctx context.Context, resetAt time.Time) error
	// APICalls is the number of API requests received so far, all routes
	// and outcomes included.
	APICalls(ctx context.Context) (int, error)
}

// InventoryMachine is a machine as the backend holds it. Managed is true
// for machines the provider would list (made by this system).
type InventoryMachine struct {
	ID      string
	Name    string
	Managed bool
}

// Inventory sees and changes the backend directly (out of band).
type Inventory interface {
	// Machines returns every machine of the account's backend.
	Machines(ctx context.Context) ([]InventoryMachine, error)
	// Seed adds n running machines named namePrefix-<something>, managed
	// (the provider lists them) or not, and returns their ids.
	Seed(ctx context.Context, n int, managed bool, namePrefix string) ([]string, error)
	// Remove deletes machines at once, as if done in the provider's console.
	Remove(ctx context.Context, ids []string) error
}

// Service controls the provider service process.
type Service interface {
	// Kill stops the service abruptly (SIGKILL, or closing its bus
	// connection): no reply in flight is sent.
	Kill(ctx context.Context) error
	// Restart starts the service again (after Kill, or kills it first).
	Restart(ctx context.Context) error
	// Reconnect makes the service's bus connection drop and reconnect.
	Reconnect(ctx context.Context) error
}
