package provider

import (
	"context"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Remote calls a provider over its bus subjects
// (compute.internal.provider.<ID>.<verb>), whatever language serves it.
// Errors are the provider's *api.ComputeError, or UNAVAILABLE when no
// provider answers before ctx's deadline.
type Remote struct {
	NC *nats.Conn
	ID string
	// Observe, when set, receives after every reply (failures included) the
	// provider API's rate-limit state, with reported false when the reply
	// carried none (the provider reports no budget).
	Observe func(rl api.RateLimit, reported bool)
	// IdempotencyKey, when set, is the key of the one machine this Remote
	// acts on: Get answers absent, and Delete, Power and Reinstall answer
	// NOT_FOUND, for a machine carrying another key (see Client).
	IdempotencyKey string
}

// call sends one verb and reports the reply's rate-limit state to Observe.
func (r Remote) call(ctx context.Context, verb string, in, out any) error {
	h, err := bus.CallHeaders(ctx, r.NC, bus.ProviderCall(r.ID, verb), in, out)
	if r.Observe != nil && h != nil {
		r.Observe(RateLimitFromHeaders(h))
	}
	return err
}

// Describe returns the provider's definition, manifest and config schema.
func (r Remote) Describe(ctx context.Context) (*api.ProviderDescription, error) {
	var out api.ProviderDescription
	if err := r.call(ctx, VerbDescribe, api.Empty{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Offers returns the account's offers matching q.
func (r Remote) Offers(ctx context.Context, acct api.ProviderAccount, q api.OfferQuery) ([]api.Offer, error) {
	var out api.List[api.Offer]
	err := r.call(ctx, VerbOffers, api.ProviderOffersRequest{Account: acct, Query: q}, &out)
	return out.Items, err
}

// Create makes (or finds, for a key seen before) the machine of spec.
func (r Remote) Create(ctx context.Context, acct api.ProviderAccount, key string, spec api.MachineSpec) (*api.ExternalMachine, error) {
	return r.CreateRequest(ctx, api.ProviderCreateRequest{Account: acct, IdempotencyKey: key, Machine: spec})
}

// CreateRequest is Create with the whole request (e.g. FirstAttempt set).
func (r Remote) CreateRequest(ctx context.Context, req api.ProviderCreateRequest) (*api.ExternalMachine, error) {
	var out api.ExternalMachine
	if err := r.call(ctx, VerbCreate, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get returns the machine, or nil, nil when the provider reports it absent.
func (r Remote) Get(ctx context.Context, acct api.ProviderAccount, id string) (*api.ExternalMachine, error) {
	var out api.ProviderGetReply
	err := r.call(ctx, VerbGet, api.ProviderMachineRequest{Account: acct, ID: id, IdempotencyKey: r.IdempotencyKey}, &out)
	return out.Machine, err
}

// Delete removes the machine (NOT_FOUND when absent).
func (r Remote) Delete(ctx context.Context, acct api.ProviderAccount, id string) error {
	return r.call(ctx, VerbDelete, api.ProviderMachineRequest{Account: acct, ID: id, IdempotencyKey: r.IdempotencyKey}, nil)
}

// DeleteByKey requests the deletion of every machine carrying key,
// finished or half-made (delete with no id): NOT_FOUND when none does,
// UNSUPPORTED when the provider lacks the delete.byKey capability.
func (r Remote) DeleteByKey(ctx context.Context, acct api.ProviderAccount, key string) error {
	return r.call(ctx, VerbDelete, api.ProviderMachineRequest{Account: acct, IdempotencyKey: key}, nil)
}

// Power applies a power action (api.Action*).
func (r Remote) Power(ctx context.Context, acct api.ProviderAccount, id string, action api.PowerAction) error {
	return r.call(ctx, VerbPower, api.ProviderPowerRequest{Account: acct, ID: id, Action: action, IdempotencyKey: r.IdempotencyKey}, nil)
}

// Reinstall reinstalls the machine with image.
func (r Remote) Reinstall(ctx context.Context, acct api.ProviderAccount, id, image string) (*api.ExternalMachine, error) {
	var out api.ExternalMachine
	req := api.ProviderReinstallRequest{Account: acct, ID: id, Image: image, IdempotencyKey: r.IdempotencyKey}
	if err := r.call(ctx, VerbReinstall, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List returns one page of the account's managed machines.
func (r Remote) List(ctx context.Context, acct api.ProviderAccount, cursor string, limit int) (api.List[api.ExternalMachine], error) {
	var out api.List[api.ExternalMachine]
	err := r.call(ctx, VerbList, api.ProviderListRequest{Account: acct, Cursor: cursor, Limit: limit}, &out)
	return out, err
}

// Resize moves the machine to req.OfferID (req.Account, req.ID and the
// Remote's IdempotencyKey, when req has none, name it).
func (r Remote) Resize(ctx context.Context, req api.ProviderResizeRequest) (*api.ResizeResult, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = r.IdempotencyKey
	}
	var out api.ResizeResult
	if err := r.call(ctx, VerbResize, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Metrics returns the machine's usage series of w.
func (r Remote) Metrics(ctx context.Context, acct api.ProviderAccount, id string, w api.MetricsWindow) (*api.Metrics, error) {
	var out api.Metrics
	req := api.ProviderMetricsRequest{Account: acct, ID: id, IdempotencyKey: r.IdempotencyKey, MetricsWindow: w}
	if err := r.call(ctx, VerbMetrics, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
