package provider

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Relabeler is implemented by clients with the "labels" capability.
type Relabeler interface {
	// Relabel replaces the user labels of machine id with labels (valid
	// by api.ValidateLabels; empty removes them all), keeping the
	// provider's own system labels (its idempotency key's), and returns
	// the machine as it now is. NOT_FOUND for an absent machine. Sending
	// the same labels again changes nothing (it is idempotent).
	Relabel(ctx context.Context, call *Call, id string, labels map[string]string) (*api.ExternalMachine, error)
}

// relabel serves relabel: the id (and optional key) checked like every
// machine verb's, the labels by api.ValidateLabels (INVALID_INPUT at
// labels[<key>]); UNSUPPORTED without the labels capability.
func (s *server) relabel(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderRelabelRequest
	if err := decodeMachineRequest(req, &in, &in.ID, &in.IdempotencyKey, call); err != nil {
		return nil, err
	}
	if err := api.ValidateLabels("labels", in.Labels); err != nil {
		return nil, err
	}
	r, ok := c.(Relabeler)
	if !ok || !s.def.Has(CapabilityLabels) {
		return nil, api.Errorf(api.CodeUnsupported, "provider %s does not support labels", s.def.ID())
	}
	return r.Relabel(ctx, call, in.ID, in.Labels)
}

// Relabel replaces the machine's user labels (UNSUPPORTED when the
// provider lacks the labels capability).
func (r Remote) Relabel(ctx context.Context, acct api.ProviderAccount, id string, labels map[string]string) (*api.ExternalMachine, error) {
	var out api.ExternalMachine
	req := api.ProviderRelabelRequest{Account: acct, ID: id, Labels: labels, IdempotencyKey: r.IdempotencyKey}
	if err := r.call(ctx, VerbRelabel, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
