package secrets

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/metrics"
)

// resolve answers a reference's value to a service
// (compute.internal.secrets.resolve). Errors: those of lookup, UNSUPPORTED
// (path ref, details.scheme) for a scheme without a configured store: the
// deployment cannot resolve it.
func (s *service) resolve(ctx context.Context, req *bus.Request) (any, error) {
	value, err := s.lookup(ctx, req, api.CodeUnsupported, "secret resolved")
	observeLookup("resolve", err)
	if err != nil {
		return nil, err
	}
	return api.SecretResolveReply{Value: value}, nil
}

// check runs every check of resolve but answers only success
// (compute.internal.secrets.check), so accounts can validate references
// without ever holding a value. Errors: those of lookup, INVALID_INPUT
// (path ref, details.scheme) for a scheme without a configured store: the
// reference in the request cannot be used here.
func (s *service) check(ctx context.Context, req *bus.Request) (any, error) {
	_, err := s.lookup(ctx, req, api.CodeInvalidInput, "secret checked")
	observeLookup("check", err)
	if err != nil {
		return nil, err
	}
	return api.Empty{}, nil
}

// lookup decodes a resolve request and resolves it through the broker,
// logging event on success (never the value). Errors: INVALID_INPUT (body,
// tenantId, ref), unconfigured (path ref: no store for the scheme),
// INVALID_CONFIG, ACCESS_DENIED, NOT_FOUND, UNAVAILABLE, INTERNAL.
func (s *service) lookup(ctx context.Context, req *bus.Request, unconfigured api.Code, event string) (string, error) {
	var in api.SecretResolveRequest
	if err := req.Decode(&in); err != nil {
		return "", err
	}
	switch {
	case in.TenantID == "":
		return "", api.InvalidInput("tenantId", "tenantId is required")
	case !api.ValidTenant(in.TenantID):
		return "", api.InvalidInput("tenantId", "tenantId must be a valid tenant id ([a-z0-9][a-z0-9-]{0,62})")
	case in.Ref == "":
		return "", api.InvalidInput("ref", "ref is required")
	}
	value, err := s.broker.resolve(ctx, in.TenantID, in.Ref, unconfigured)
	if err != nil {
		return "", err
	}
	req.Log.Debug().Str("for_tenant", in.TenantID).Str("ref", in.Ref).Msg(event)
	return value, nil
}

// observeLookup counts a lookup of verb (resolve or check) by its outcome
// in metrics.SecretResolves: OK or the error's code, never the reference.
func observeLookup(verb string, err error) {
	outcome := metrics.CodeOK
	if err != nil {
		outcome = metrics.CodeLabel(api.CodeOf(err))
	}
	metrics.SecretResolves.WithLabelValues(verb, outcome).Inc()
}
