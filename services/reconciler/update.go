package reconciler

import (
	"context"
	"maps"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// updateInstance answers instances.update: it changes the instance's
// desired spec and bumps its generation once, and the reconciler
// converges. Labels (when present; {} removes them all) replace the
// instance's: the relabel phase gives them to the machine. Image queues a
// reinstall exactly as instances.reinstall does (queueReinstall: the
// instance's image changes when it succeeded). Flavor, which must be one
// of the pool's, is stored: the resize operation converges the machine to
// it. A request asking for what is already desired changes nothing (the
// record is answered unwritten, generation unchanged). Version, when set,
// must be the record's. Errors: INVALID_INPUT (id, flavor with
// details.allowed, image, labels[<key>]), NOT_FOUND, CONFLICT (version),
// INVALID_STATE (being deleted, or an image change while another one-shot
// operation has not finished), UNAVAILABLE.
func (r *Reconciler) updateInstance(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstanceUpdateRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := validateUpdate(&in); err != nil {
		return nil, err
	}
	if in.Flavor != "" {
		if err := r.checkFlavor(ctx, req.Tenant, &in); err != nil {
			return nil, err
		}
	}
	return r.mutate(ctx, req, in.ID, func(inst *api.Instance) error {
		if in.Version != 0 && inst.Version != in.Version {
			ce := api.Errorf(api.CodeConflict, "instance %s is at version %d, not %d: read it again and retry", inst.ID, inst.Version,
				in.Version).WithPath("version")
			ce.Details.ID = inst.ID
			return ce
		}
		changed := false
		if in.Flavor != "" && in.Flavor != inst.Flavor {
			inst.Flavor, changed = in.Flavor, true
		}
		if in.Labels != nil && !maps.Equal(in.Labels, inst.Labels) {
			inst.Labels, changed = appliedLabels(in.Labels), true
		}
		if in.Image != "" && in.Image != pendingImage(inst) {
			if err := r.queueReinstall(inst, in.Image); err != nil {
				return err
			}
			changed = true
		}
		if !changed {
			return errUnchanged
		}
		return nil
	}, "update")
}

// validateUpdate checks the fields of an update that need no lookup.
func validateUpdate(in *api.InstanceUpdateRequest) error {
	switch {
	case !api.ValidID(api.PrefixInstance, in.ID):
		return api.InvalidInput("id", "id must be an instance id (inst_…)")
	case in.Version < 0:
		return api.InvalidInput("version", "version must be a record version (1 or more), or absent")
	}
	if err := api.CheckImage("image", in.Image, false); err != nil {
		return err
	}
	return api.ValidateLabels("labels", in.Labels)
}

// checkFlavor refuses a flavor the instance's pool does not have
// (INVALID_INPUT at flavor, details.allowed its flavors). Errors also:
// NOT_FOUND (instance), UNAVAILABLE.
func (r *Reconciler) checkFlavor(ctx context.Context, tenant string, in *api.InstanceUpdateRequest) error {
	inst, err := r.load(ctx, tenant, in.ID)
	if err != nil {
		return err
	}
	pool, _, err := r.pools.Get(ctx, tenant, inst.PoolID)
	if api.IsCode(err, api.CodeNotFound) {
		return api.Errorf(api.CodeInvalidState, "pool %s of instance %s no longer exists", inst.PoolID, inst.ID)
	}
	if err != nil {
		return err
	}
	_, err = poolFlavor(&pool, in.Flavor)
	return err
}

// pendingImage is the image the instance's machine runs or is being
// reinstalled to: the unfinished reinstall's, else the instance's.
func pendingImage(inst *api.Instance) string {
	op, last := inst.Desired.Operation, inst.Status.LastOperation
	if op != nil && op.Action == api.ActionReinstall && (last == nil || last.ID != op.ID || last.State == api.OperationExecuting) {
		return op.Image
	}
	return inst.Image
}
