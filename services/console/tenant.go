package console

import (
	"context"

	"better-compute.io/compute/pkg/api"
)

// Tenant is what the console reads of the system as one signed-in tenant,
// over that tenant's own connection. Errors are *api.ComputeError
// (UNAVAILABLE when no service answers, NOT_FOUND for an unknown id).
type Tenant interface {
	// ID is the tenant id the session signed in as.
	ID() string
	// Pools lists every pool of the tenant (all pages).
	Pools(ctx context.Context) ([]api.Pool, error)
	// Accounts lists every provider account of the tenant (all pages).
	Accounts(ctx context.Context) ([]api.Account, error)
	// Instances lists every instance of the tenant (all pages).
	Instances(ctx context.Context) ([]api.Instance, error)
	// Instance gets one instance by id.
	Instance(ctx context.Context, id string) (*api.Instance, error)
	// Metrics reads the usage metrics of instance id's machine in window w
	// (instances.metrics).
	Metrics(ctx context.Context, id string, w api.MetricsWindow) (api.Metrics, error)
	// Offers lists the offers of one account (accounts.offers, no filter).
	Offers(ctx context.Context, accountID string) ([]api.Offer, error)
	// WatchEvents calls f with every event of the tenant
	// (compute.v1.<tenant>.events.>) until stop is called.
	WatchEvents(f func(api.Event)) (stop func(), err error)
	// Close closes the tenant's connection.
	Close()
}

// Credentials are what a user signs in with: the tenant id and a
// credential of that tenant (operator mode: the tenant is a NATS account,
// its users are credentials minted by `compute tenants credentials`).
type Credentials struct {
	// Tenant is the tenant id.
	Tenant string
	// Creds is the text of the tenant's .creds file (a user JWT and its
	// nkey seed).
	Creds string
}

// Dialer connects as the tenant of c. Errors: ACCESS_DENIED when the
// server refuses the credentials, UNAVAILABLE when no server answers,
// INVALID_INPUT (details.path "creds") for an unreadable creds text.
type Dialer func(ctx context.Context, c Credentials) (Tenant, error)
