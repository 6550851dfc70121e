package client

import (
	"context"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Bootstrap claims dedicated server req.ServerNumber of account
// req.AccountID into pool req.PoolID (class metal-host or vps-host) and
// starts its bootstrap (accounts.bootstrap): the reply is the instance
// whose machine the server becomes; Instances.Wait follows it to Running
// (status.bootstrap says which step it is at). Errors: INVALID_INPUT (path
// accountId, poolId, serverNumber, image, hostname, drives[i], raidLevel,
// flavor), ALREADY_EXISTS (path name: the hostname is taken in the pool),
// INVALID_STATE (the pool is being deleted), CONFLICT (idempotency key
// reused with another request), UNAVAILABLE. A server that is not free
// to claim fails the instance with ACCESS_DENIED.
func (a AccountClient) Bootstrap(ctx context.Context, req api.AccountBootstrapRequest) (api.Instance, error) {
	return call[api.Instance](ctx, a.c, bus.ResourceAccounts, "bootstrap", req)
}
