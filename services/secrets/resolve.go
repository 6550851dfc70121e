package secrets

import (
	"context"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/metrics"
)

// resolve answers a reference's value to a service
// (compute.internal.secrets.resolve). Errors: those of lookup, UNSUPPORTED
// (path ref, details.scheme) for a scheme without a configured store: the
// deployment cannot resolve it.
func (s *service) resolve(ctx context.Context, req *bus.Request) (any, error) {
	value, _, err := s.lookup(ctx, req, api.CodeUnsupported, "secret resolved")
	observeLookup("resolve", err)
	if err != nil {
		return nil, err
	}
	return api.SecretResolveReply{Value: value}, nil
}

// check runs every check of resolve but answers only success
// (compute.internal.secrets.check), so accounts can validate references
// without ever holding a value. A secret:// secret a delete has marked
// (see delete) does not pass: accounts checks again after writing a
// record, so a record and the delete of a secret it names never both
// succeed. Errors: those of lookup, INVALID_INPUT (path ref,
// details.scheme) for a scheme without a configured store: the reference
// in the request cannot be used here; NOT_FOUND for a secret being deleted.
func (s *service) check(ctx context.Context, req *bus.Request) (any, error) {
	_, ref, err := s.lookup(ctx, req, api.CodeInvalidInput, "secret checked")
	if err == nil && ref.Scheme == api.SchemeSecret {
		var rec record
		if rec, _, err = s.local.read(ctx, ref.Tenant, ref.ID); err == nil {
			err = beingDeleted(&rec, time.Now())
		}
	}
	observeLookup("check", err)
	if err != nil {
		return nil, err
	}
	return api.Empty{}, nil
}

// lookup decodes a resolve request and resolves it through the broker,
// logging event on success (never the value); it returns the value and the
// parsed reference. Errors: INVALID_INPUT (body,
// tenantId, ref), unconfigured (path ref: no store for the scheme),
// INVALID_CONFIG, ACCESS_DENIED, NOT_FOUND, UNAVAILABLE, INTERNAL.
func (s *service) lookup(ctx context.Context, req *bus.Request, unconfigured api.Code, event string) (string, api.SecretRef, error) {
	var in api.SecretResolveRequest
	if err := req.Decode(&in); err != nil {
		return "", api.SecretRef{}, err
	}
	switch {
	case in.TenantID == "":
		return "", api.SecretRef{}, api.InvalidInput("tenantId", "tenantId is required")
	case !api.ValidTenant(in.TenantID):
		return "", api.SecretRef{}, api.InvalidInput("tenantId", "tenantId must be a valid tenant id ([a-z0-9][a-z0-9-]{0,62})")
	case in.Ref == "":
		return "", api.SecretRef{}, api.InvalidInput("ref", "ref is required")
	}
	value, err := s.broker.resolve(ctx, in.TenantID, in.Ref, unconfigured)
	if err != nil {
		return "", api.SecretRef{}, err
	}
	req.Log.Debug().Str("for_tenant", in.TenantID).Str("ref", in.Ref).Msg(event)
	ref, _ := api.ParseSecretRef(in.Ref) // broker.resolve parsed it already
	return value, ref, nil
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
