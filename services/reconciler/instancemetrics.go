package reconciler

import (
	"context"
	"errors"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// instanceMetrics answers instances.metrics: the usage series of the instance's
// machine (type cpu, disk or network over [from, to) every step seconds),
// read from its provider's metrics verb (Hetzner GET /servers/{id}/metrics,
// Proxmox rrddata) within the call timeout. Nothing is stored.
// Errors: INVALID_INPUT (id, type, from, to, step; see
// api.MetricsWindow.Check), NOT_FOUND, INVALID_STATE (no machine
// recorded, the instance being deleted, its pool or account gone),
// UNSUPPORTED (the provider lacks the metrics capability), and the
// provider's (PROVIDER_ERROR, RATE_LIMITED, UNAVAILABLE).
func (r *Reconciler) instanceMetrics(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstanceMetricsRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := in.Check(r.now()); err != nil {
		return nil, err
	}
	inst, err := r.load(ctx, req.Tenant, in.ID)
	if err != nil {
		return nil, err
	}
	m := inst.Status.Machine
	if inst.DeletionRequestedAt != nil || m == nil {
		return nil, api.Errorf(api.CodeInvalidState, "instance %s is %s: no machine to read metrics of", in.ID, inst.Status.Phase)
	}
	s := &scope{inst: *inst, log: req.Log}
	if err := r.resolveTarget(ctx, s); err != nil {
		var se storeError
		if errors.As(err, &se) {
			return nil, se.error
		}
		return nil, err
	}
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	return s.remote.Metrics(cctx, s.account, m.ID, in.MetricsWindow)
}
