package provider

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// VerbCheckPool is the provider verb pools.create asks before it writes a
// pool: api.ProviderPoolCheckRequest → api.Empty.
const VerbCheckPool = "checkpool"

// PoolChecker is implemented by clients that can tell, before a pool is
// made, whether the account can have its network, placement and flavors.
type PoolChecker interface {
	// CheckPool answers nil when the account can have a pool of req's
	// network, placement and flavors, else INVALID_INPUT whose
	// details.path names the pool field refused ("network.bridge",
	// "placement.nodes[1]", "flavors[0].storage", …); PROVIDER_ERROR or
	// UNAVAILABLE when the provider's API could not tell.
	CheckPool(ctx context.Context, call *Call, req api.ProviderPoolCheckRequest) error
}

// checkpool serves VerbCheckPool: a client that is no PoolChecker has
// nothing to check, so every pool passes.
func (s *server) checkpool(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderPoolCheckRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if pc, ok := c.(PoolChecker); ok {
		if err := pc.CheckPool(ctx, call, in); err != nil {
			return nil, err
		}
	}
	return api.Empty{}, nil
}

// CheckPool asks the provider whether acct can have a pool of req's
// network, placement and flavors (req.Account is set to acct): nil, or
// the provider's INVALID_INPUT naming the pool field.
func (r Remote) CheckPool(ctx context.Context, acct api.ProviderAccount, req api.ProviderPoolCheckRequest) error {
	req.Account = acct
	return r.call(ctx, VerbCheckPool, req, nil)
}
