package provider

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
)

// Client is what every provider implements for one account. Errors are
// *api.ComputeError values (see each method); any other error is reported as
// PROVIDER_ERROR.
//
// Machines report the idempotency key they carry (ExternalMachine
// .IdempotencyKey). When call.IdempotencyKey is set on get, delete, power
// or reinstall, the caller's machine carries that key: Serve answers get
// with absent for a machine carrying another key, and a provider whose
// machine ids can be reused (a Proxmox VMID) must refuse delete, power and
// reinstall of such a machine with NOT_FOUND. Providers that never reuse
// ids (Hetzner server ids) may skip that check.
type Client interface {
	// ListOffers returns the offers matching q (an empty slice when none do).
	ListOffers(ctx context.Context, call *Call, q api.OfferQuery) ([]api.Offer, error)
	// Create makes the machine of spec, idempotently: the same
	// call.IdempotencyKey always names the same machine, also across retries,
	// concurrent calls and crashes. It may return before the machine runs.
	Create(ctx context.Context, call *Call, spec api.MachineSpec) (*api.ExternalMachine, error)
	// Get returns the machine with the provider id, or nil, nil when absent.
	Get(ctx context.Context, call *Call, id string) (*api.ExternalMachine, error)
	// Delete removes the machine; NOT_FOUND when it is absent.
	Delete(ctx context.Context, call *Call, id string) error
}

// Powerer is implemented by clients with the "power" capability.
type Powerer interface {
	// Power applies action (api.Action*); NOT_FOUND for an absent machine,
	// UNSUPPORTED for an action the provider cannot do.
	Power(ctx context.Context, call *Call, id string, action api.PowerAction) error
}

// Reinstaller is implemented by clients with the "reinstall" capability.
type Reinstaller interface {
	// Reinstall replaces the machine's disk with image, keeping its id.
	Reinstall(ctx context.Context, call *Call, id, image string) (*api.ExternalMachine, error)
}

// Lister is implemented by clients with the "list" capability.
type Lister interface {
	// List returns up to limit managed machines after cursor, and the cursor of
	// the next page ("" on the last one). Only machines this system manages.
	List(ctx context.Context, call *Call, cursor string, limit int) ([]api.ExternalMachine, string, error)
}

// KeyDeleter is implemented by clients with the "delete.byKey" capability.
type KeyDeleter interface {
	// DeleteByKey requests the deletion of every machine carrying key,
	// finished or half-made (one a crashed create left behind, which get
	// and list may not show), and returns once the deletes are requested
	// or done; machines already being deleted count as requested.
	// NOT_FOUND when no machine carries the key. A machine of the key that
	// cannot be deleted now (a create of the key still making it) is a
	// retryable error (UNAVAILABLE, or PROVIDER_ERROR a retry can pass),
	// never NOT_FOUND. The caller repeats it until NOT_FOUND.
	DeleteByKey(ctx context.Context, call *Call, key string) error
}

// Resizer is implemented by clients with the "resize" capability.
type Resizer interface {
	// Resize moves the machine to req.OfferID in place (same id, same disk
	// contents), growing the disk when req.DiskGrow says so (never
	// shrinking it), and leaves it in req.Power (empty: as it was). A
	// machine already on the offer is answered as it is, Changed false,
	// with nothing sent: a caller that lost the reply re-observes instead
	// of resizing twice. Errors: INVALID_INPUT naming offerId (an unknown
	// offer, or one the machine cannot move to, e.g. a smaller disk than
	// today's; nothing sent), NOT_FOUND, PROVIDER_ERROR (details.notExecuted
	// when the change itself was refused before it ran, e.g. 423 locked),
	// RATE_LIMITED, UNAVAILABLE.
	Resize(ctx context.Context, call *Call, req api.ProviderResizeRequest) (*api.ResizeResult, error)
}

// MetricsReader is implemented by clients with the "metrics" capability.
type MetricsReader interface {
	// Metrics answers the machine's usage series of w (already checked by
	// Serve), mapped to the names of api.MetricsType. Errors: NOT_FOUND,
	// PROVIDER_ERROR, RATE_LIMITED, UNAVAILABLE.
	Metrics(ctx context.Context, call *Call, id string, w api.MetricsWindow) (*api.Metrics, error)
}

// SecretResolver turns a secret reference into its value for one call.
type SecretResolver interface {
	// Resolve returns the value of ref. Errors: NOT_FOUND, ACCESS_DENIED,
	// INVALID_CONFIG (no store for the scheme), UNAVAILABLE.
	Resolve(ctx context.Context, ref string) (string, error)
}

// Sleep waits d on clock, or until ctx ends (returning UNAVAILABLE wrapping
// the context's error).
func Sleep(ctx context.Context, c clock.Clock, d time.Duration) error {
	select {
	case <-ctx.Done():
		return api.Errorf(api.CodeUnavailable, "call ended while waiting: %v", ctx.Err())
	case <-c.After(d):
		return nil
	}
}

// Call is the context of one provider call besides ctx (which carries the
// deadline and cancellation): the idempotency key of a create (or the key
// the machine of a get, delete, power or reinstall must carry), the account,
// the clock, a secret resolver scoped to the account's tenant, and a logger
// carrying the account and request ids.
type Call struct {
	IdempotencyKey string
	// FirstAttempt (create only): the caller guarantees no create with this
	// key was sent before, so a lookup by key would find nothing. Concurrent
	// creates of one key must still meet on one machine.
	FirstAttempt bool
	Account      api.ProviderAccount
	Clock        clock.Clock
	Secrets      SecretResolver
	Log          zerolog.Logger

	// observed holds the rate-limit state seen during the call (set by Serve;
	// nil in a Call built by hand, which then drops observations).
	observed *observedRateLimit
}

type observedRateLimit struct {
	mu sync.Mutex
	rl *api.RateLimit
}

// ObserveRateLimit records the API's rate-limit state seen during the call
// (the last observation wins); Serve returns it to the caller in reply
// headers so callers can pace themselves.
func (c *Call) ObserveRateLimit(rl api.RateLimit) {
	if c.observed == nil {
		return
	}
	c.observed.mu.Lock()
	defer c.observed.mu.Unlock()
	c.observed.rl = &rl
}

// RateLimit is the last observed rate-limit state, if any.
func (c *Call) RateLimit() (api.RateLimit, bool) {
	if c.observed == nil {
		return api.RateLimit{}, false
	}
	c.observed.mu.Lock()
	defer c.observed.mu.Unlock()
	if c.observed.rl == nil {
		return api.RateLimit{}, false
	}
	return *c.observed.rl, true
}

// Secret resolves the secret reference held by the config field name.
// Errors: INVALID_CONFIG when the field is not a string, and those of
// SecretResolver.Resolve.
func (c *Call) Secret(ctx context.Context, field string) (string, error) {
	ref, ok := c.Account.Config[field].(string)
	if !ok || ref == "" {
		return "", api.InvalidConfig("config."+field, "config field %s must hold a secret reference", field)
	}
	return c.Secrets.Resolve(ctx, ref)
}

// CallLog starts the one log line a provider writes per call, with the
// outcome: debug on success; info when err is NOT_FOUND (an answer, e.g. a
// delete by key with nothing left to delete); warn with the error's code
// and message otherwise.
func (c *Call) CallLog(err error) *zerolog.Event {
	if err == nil {
		return c.Log.Debug()
	}
	ce := api.AsComputeError(err)
	ev := c.Log.Warn()
	if ce.Code == api.CodeNotFound {
		ev = c.Log.Info()
	}
	return ev.Str("code", string(ce.Code)).Str("error", ce.Message)
}
