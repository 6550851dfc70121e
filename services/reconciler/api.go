package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

func (r *Reconciler) endpoints() []bus.Endpoint {
	ep := func(verb string, h bus.Handler) bus.Endpoint {
		return bus.CommandEndpoint(bus.ResourceInstances, verb, h)
	}
	return []bus.Endpoint{
		ep("create", r.create), ep("get", r.get), ep("list", r.list), ep("delete", r.delete),
		ep("power", r.power), ep("reinstall", r.reinstall), ep("exec", r.exec), ep("logs", r.logs),
		ep("update", r.updateInstance),
		ep("metrics", r.instanceMetrics),
		r.bootstrapEndpoint(),
	}
}

// idempotencyRecord maps a create's idempotency key to the instance it made.
type idempotencyRecord struct {
	InstanceID  string `json:"instanceId"`
	RequestHash string `json:"requestHash"`
	// Written was set, by versions before the delete markers were read
	// (claimIdempotency), once the instance record was written; it is
	// still honoured, never written any more.
	Written bool `json:"written,omitempty"`
}

// createOp names instance creates in compute_idempotency
// (bus.IdempotencyID); deploy/nats.conf lets the reconciler write
// $KV.compute_idempotency.*.instances-create.* only.
var createOp = bus.EndpointName(bus.ResourceInstances, "create")

// create answers instances.create: validates the request against the pool,
// writes the instance (phase Pending, generation 1) and queues its work.
// Errors: INVALID_INPUT (field named), CONFLICT (idempotency key reused with
// another request), RATE_LIMITED (quotas.createsPerSecond),
// CAPACITY_UNAVAILABLE (quotas.instances, quotas.instancesPerPool; see
// usage.go), UNAVAILABLE.
func (r *Reconciler) create(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstanceCreateRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := validateCreate(&in); err != nil {
		return nil, err
	}
	if err := r.admitCreate(req.Tenant, r.now()); err != nil {
		return nil, err
	}
	pool, err := r.pool(ctx, req.Tenant, in.PoolID)
	if api.IsCode(err, api.CodeNotFound) {
		return nil, api.InvalidInput("poolId", "pool %q not found", in.PoolID)
	}
	if err != nil {
		return nil, err
	}
	if err := refuseDeletingPool(&pool); err != nil {
		return nil, err
	}
	if api.HostPoolClass(pool.Class) {
		return nil, api.InvalidInput("poolId", "pool %s is of class %s: its instances are servers claimed with accounts.bootstrap",
			pool.ID, pool.Class)
	}
	flavor, err := poolFlavor(&pool, in.Flavor)
	if err != nil {
		return nil, err
	}
	if in.Image == "" {
		in.Image = flavor.Image
	}
	if in.Image == "" {
		return nil, api.InvalidInput("image", "image is required: flavor %q has no default image", in.Flavor)
	}
	if in.Power == "" {
		in.Power = api.PowerOn
	}
	return r.writeInstance(ctx, req, &in, nil)
}

// writeInstance is the write of a checked create (in's pool, flavor and
// image resolved; boot the bootstrap spec of a host pool's instance, or
// nil): it claims the idempotency key, refuses a taken name, writes the
// instance (Pending, generation 1) and queues its work.
func (r *Reconciler) writeInstance(ctx context.Context, req *bus.Request, in *api.InstanceCreateRequest,
	boot *api.BootstrapSpec) (any, error) {
	id := api.NewID(api.PrefixInstance)
	if in.IdempotencyKey != "" {
		existing, claimed, err := r.claimIdempotency(ctx, req.Tenant, in, id)
		if err != nil || existing != nil {
			return existing, err
		}
		id = claimed
	}
	if err := r.refuseTakenName(ctx, req.Tenant, in, id); err != nil {
		return nil, err
	}
	now := r.now()
	name := in.Name
	if name == "" {
		name = id
	}
	inst := api.Instance{
		ID: id, TenantID: req.Tenant, PoolID: in.PoolID, Flavor: in.Flavor, Image: in.Image, Name: name,
		UserData: in.UserData, SSHKeys: in.SSHKeys, Labels: appliedLabels(in.Labels), Desired: api.DesiredState{Power: in.Power},
		Generation: 1, CreatedAt: now, Bootstrap: boot,
	}
	sealRecord(&inst, now) // version 1
	undoReservation, err := r.reserveInstance(ctx, req.Tenant, in.PoolID)
	if err != nil {
		return nil, err
	}
	if _, err := r.instances.Create(ctx, req.Tenant, id, inst); err != nil {
		undoReservation()                           // not written, or counted when it was
		if api.IsCode(err, api.CodeAlreadyExists) { // a retry after a crash between the two writes
			existing, err := r.load(ctx, req.Tenant, id)
			if err == nil {
				r.enqueue(existing)
			}
			return existing, err
		}
		return nil, err
	}
	if err := r.recheckPool(ctx, req.Tenant, in.PoolID); err != nil {
		// The pool is being deleted (or is gone): take the instance back
		// rather than leave it orphaned.
		if r.instances.Remove(ctx, req.Tenant, id) == nil {
			undoReservation()
			if in.IdempotencyKey != "" {
				// The retry of this create must make the instance, not
				// find the tombstone of the one taken back ("deleted since").
				_ = r.idempotency.Remove(ctx, req.Tenant, bus.IdempotencyID(createOp, in.IdempotencyKey))
			}
		}
		return nil, err
	}
	req.Log.Info().Str("instance", id).Str("pool", in.PoolID).Str("flavor", in.Flavor).Msg("instance created")
	r.publishEvent(&inst, api.EventCreated, "")
	r.enqueue(&inst)
	return &inst, nil
}

// refuseTakenName is ALREADY_EXISTS (path name, details.id the holder)
// when another instance than id in in's pool is called in.Name (an empty
// name becomes the new id: never taken); an instance being deleted is
// giving its name up and does not hold it (its machine may, for a while:
// the provider then refuses, see nameheld.go). It runs after the idempotency
// claim, so a replay answers its own instance instead. Two creates of one
// name at the same moment may both pass: the check is a read (one KV scan,
// bus.Reader.Find), not a lock; such duplicates, like those made before the
// check existed, keep working.
// Errors: ALREADY_EXISTS, UNAVAILABLE.
func (r *Reconciler) refuseTakenName(ctx context.Context, tenant string, in *api.InstanceCreateRequest, id string) error {
	if in.Name == "" {
		return nil
	}
	holder, taken, err := r.instances.Reader().Find(ctx, tenant, func(i *api.Instance) bool {
		return i.PoolID == in.PoolID && i.Name == in.Name && i.ID != id && i.DeletionRequestedAt == nil
	})
	if err != nil || !taken {
		return err
	}
	ce := api.Errorf(api.CodeAlreadyExists, "pool %s already has an instance called %q (%s)", in.PoolID, in.Name, holder.ID).
		WithPath("name")
	ce.Details.ID = holder.ID
	return ce
}

// poolFlavor is p's flavor called name: INVALID_INPUT at flavor (with
// details.allowed, p's flavors) when p has none of that name.
func poolFlavor(p *api.Pool, name string) (api.Flavor, error) {
	flavor, ok := p.Flavor(name)
	if !ok {
		names := flavorNames(p)
		ce := api.InvalidInput("flavor", "pool %s has no flavor %q (its flavors: %s)", p.ID, name, strings.Join(names, ", "))
		ce.Details.Allowed = names
		return api.Flavor{}, ce
	}
	return flavor, nil
}

// flavorNames lists p's flavor names in pool order.
func flavorNames(p *api.Pool) []string {
	names := make([]string, len(p.Flavors))
	for i, f := range p.Flavors {
		names[i] = f.Name
	}
	return names
}

// claimIdempotency records key → id for a create. If the key was used
// before it returns the instance it made (CONFLICT when the request
// differs; INVALID_STATE when that instance was deleted since), or, when
// that instance was never written (a crash between the two writes), the
// recorded id to create it under. A new key costs one write (the record is
// created first, read only when it exists); whether an instance that is
// not found was deleted since or never written is its key's delete marker
// in compute_instances (Table.Deleted), read only then: no write marks a
// create as done, and no crash can leave one unmarked.
func (r *Reconciler) claimIdempotency(ctx context.Context, tenant string,
	in *api.InstanceCreateRequest, id string) (*api.Instance, string, error) {
	body, _ := json.Marshal(in)
	reqHash := sha256.Sum256(body)
	key := bus.IdempotencyID(createOp, in.IdempotencyKey)
	rec := idempotencyRecord{InstanceID: id, RequestHash: hex.EncodeToString(reqHash[:])}
	_, err := r.idempotency.Create(ctx, tenant, key, rec)
	if err == nil {
		return nil, id, nil
	}
	if !api.IsCode(err, api.CodeAlreadyExists) {
		return nil, "", err
	}
	prev, _, created, err := r.idempotency.GetOrCreate(ctx, tenant, key, rec)
	if created {
		return nil, id, nil // the record went (its TTL) between the two
	}
	if err != nil {
		return nil, "", err
	}
	if prev.RequestHash != rec.RequestHash {
		return nil, "", api.Errorf(api.CodeConflict, "idempotencyKey was used for a different create request").WithPath("idempotencyKey")
	}
	inst, err := r.load(ctx, tenant, prev.InstanceID)
	deleted := prev.Written
	if api.IsCode(err, api.CodeNotFound) && !deleted {
		if deleted, err = r.instances.Deleted(ctx, tenant, prev.InstanceID); err != nil {
			return nil, "", err
		}
		err = api.NotFound("instance", prev.InstanceID)
	}
	if api.IsCode(err, api.CodeNotFound) && deleted {
		ce := api.Errorf(api.CodeInvalidState,
			"instance %s, created with this idempotencyKey, was deleted since; use a new key to create another", prev.InstanceID).
			WithPath("idempotencyKey")
		ce.Details.ID = prev.InstanceID
		return nil, "", ce
	}
	if api.IsCode(err, api.CodeNotFound) {
		return nil, prev.InstanceID, nil
	}
	if err == nil {
		// The first attempt may have ended before its work was queued;
		// queueing again is free (deduplicated by message id).
		r.enqueue(inst)
	}
	return inst, "", err
}

// load reads one instance. Errors: NOT_FOUND, UNAVAILABLE.
func (r *Reconciler) load(ctx context.Context, tenant, id string) (*api.Instance, error) {
	inst, _, err := r.instances.Get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return &inst, nil
}

func (r *Reconciler) get(ctx context.Context, req *bus.Request) (any, error) {
	id, err := decodeID(req)
	if err != nil {
		return nil, err
	}
	return r.load(ctx, req.Tenant, id)
}

func decodeID(req *bus.Request) (string, error) {
	var in api.IDRequest
	if err := req.Decode(&in); err != nil {
		return "", err
	}
	if !api.ValidID(api.PrefixInstance, in.ID) {
		return "", api.InvalidInput("id", "id must be an instance id (inst_…)")
	}
	return in.ID, nil
}

// list answers instances.list: a page of the tenant's instances in id
// order, optionally of one pool and one phase, and matching a label
// selector (instanceFilter), answered from the replica's instance index
// (list.go): a page costs its own records at any inventory and holds
// every instance written before the list. The page is the records' JSON
// as stored (bus.Index.ListJSON: an instance record is its wire form), not
// decoded and encoded again. Errors: INVALID_INPUT, UNAVAILABLE, INTERNAL.
func (r *Reconciler) list(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstanceListRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	match, err := instanceFilter(in)
	if err != nil {
		return nil, err
	}
	return r.index.ListJSON(ctx, req.Tenant, in.Limit, in.Cursor, requiredFacets(in), match)
}

// delete answers instances.delete: marks the instance for deletion (phase
// Deleting); the reconciler deletes the machine, then the record. Repeated
// deletes answer the same. Errors: NOT_FOUND, UNAVAILABLE.
func (r *Reconciler) delete(ctx context.Context, req *bus.Request) (any, error) {
	id, err := decodeID(req)
	if err != nil {
		return nil, err
	}
	return r.mutate(ctx, req, id, func(inst *api.Instance) error {
		if inst.DeletionRequestedAt != nil {
			return errUnchanged // a repeated delete answers the same record
		}
		now := r.now()
		inst.DeletionRequestedAt = &now
		return nil
	}, "deleting")
}

// power answers instances.power: on and off set the desired power level;
// reset, cycle, graceful-restart, graceful-off and nmi queue a one-shot
// operation. graceful-off also sets the desired level to off: the machine
// shuts down and stays off (powered off hard when it still runs after
// Options.GracefulOffTimeout). Errors: INVALID_INPUT, NOT_FOUND,
// INVALID_STATE (deleting, or another operation not finished).
func (r *Reconciler) power(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstancePowerRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if !api.ValidID(api.PrefixInstance, in.ID) {
		return nil, api.InvalidInput("id", "id must be an instance id (inst_…)")
	}
	if err := validateAction(in.Action); err != nil {
		return nil, err
	}
	return r.mutate(ctx, req, in.ID, func(inst *api.Instance) error {
		switch in.Action {
		case api.ActionOn, api.ActionOff:
			inst.Desired.Power = api.Power(in.Action)
		default:
			if err := refusePendingOperation(inst); err != nil {
				return err
			}
			inst.Desired.Operation = &api.Operation{ID: api.NewID(api.PrefixOperation), Action: in.Action, RequestedAt: r.now()}
			if in.Action == api.ActionGracefulOff {
				inst.Desired.Power = api.PowerOff
			}
		}
		return nil
	}, "power-"+string(in.Action))
}

// reinstall answers instances.reinstall: queues a reinstall operation with
// the new image (desired.operation.image). The instance's image stays the
// one its machine runs until the reinstall succeeded. Errors:
// INVALID_INPUT, NOT_FOUND, INVALID_STATE (deleting).
func (r *Reconciler) reinstall(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstanceReinstallRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	imageErr := api.CheckImage("image", in.Image, true)
	switch {
	case !api.ValidID(api.PrefixInstance, in.ID):
		return nil, api.InvalidInput("id", "id must be an instance id (inst_…)")
	case imageErr != nil:
		return nil, imageErr
	}
	return r.mutate(ctx, req, in.ID, func(inst *api.Instance) error { return r.queueReinstall(inst, in.Image) }, "reinstall")
}

// queueReinstall queues a reinstall of inst with image as its one-shot
// operation (desired.operation): INVALID_STATE while another has not
// finished (refusePendingOperation); a host's image must also be one
// installimage takes (api.CheckInstallImage). instances.reinstall and an
// instances.update of the image both go this way.
func (r *Reconciler) queueReinstall(inst *api.Instance, image string) error {
	if err := refusePendingOperation(inst); err != nil {
		return err
	}
	if inst.Bootstrap != nil { // a host's reinstall runs installimage with it
		if err := api.CheckInstallImage("image", image); err != nil {
			return err
		}
	}
	inst.Desired.Operation = &api.Operation{ID: api.NewID(api.PrefixOperation), Action: api.ActionReinstall,
		Image: image, RequestedAt: r.now()}
	return nil
}

// refusePendingOperation is INVALID_STATE while the instance's last
// one-shot operation has not finished: a second one would replace it before
// it ran (a reinstall silently lost to a reset).
func refusePendingOperation(inst *api.Instance) error {
	op, last := inst.Desired.Operation, inst.Status.LastOperation
	if op == nil || last != nil && last.ID == op.ID && last.State != api.OperationExecuting {
		return nil
	}
	return api.Errorf(api.CodeInvalidState, "operation %s (%s) of instance %s has not finished; retry when status.lastOperation shows it",
		op.ID, op.Action, inst.ID)
}

// mutate applies a change of the desired state (Table.Mutate: CAS,
// retrying on conflicts), bumps generation and version, and queues the
// work. Errors: NOT_FOUND, INVALID_STATE (being deleted), change's,
// CONFLICT (the instance kept changing), UNAVAILABLE. A change
// returning errUnchanged answers the record unwritten (its work queued).
func (r *Reconciler) mutate(ctx context.Context, req *bus.Request, id string,
	change func(*api.Instance) error, what string) (*api.Instance, error) {
	var phase api.Phase
	inst, _, err := r.instances.Mutate(ctx, req.Tenant, id, func(inst *api.Instance) error {
		if inst.DeletionRequestedAt != nil && what != "deleting" {
			return api.Errorf(api.CodeInvalidState, "instance %s is being deleted", id)
		}
		phase = inst.Status.Phase
		if err := change(inst); err != nil {
			return err
		}
		inst.Generation++
		sealRecord(inst, r.now())
		return nil
	})
	if errors.Is(err, errUnchanged) {
		// Queued again all the same: the caller may be retrying because
		// the first request's work was lost, or to resume a failed one.
		r.requeue(&inst)
		return &inst, nil
	}
	if err != nil {
		return nil, err
	}
	req.Log.Info().Str("instance", id).Int64("generation", inst.Generation).Str("change", what).Msg("instance changed")
	if inst.Status.Phase != phase {
		r.publishEvent(&inst, api.PhaseEvent(inst.Status.Phase), "")
	}
	r.enqueue(&inst)
	return &inst, nil
}

// errUnchanged, returned by a mutate change, answers the record as it is
// and queues its work again: the request asks for what is already desired,
// so nothing is written and the generation stays.
var errUnchanged = errors.New("unchanged")

// recheckPool reads the pool again after an instance was written to it. A
// pools.delete marks the pool before it looks for instances, so either that
// scan sees the new instance, or this read sees the mark (or the pool gone).
// Errors: INVALID_STATE (being deleted), INVALID_INPUT (gone), UNAVAILABLE.
func (r *Reconciler) recheckPool(ctx context.Context, tenant, poolID string) error {
	pool, _, err := r.pools.Get(ctx, tenant, poolID)
	if api.IsCode(err, api.CodeNotFound) {
		return api.InvalidInput("poolId", "pool %q was deleted", poolID)
	}
	if err != nil {
		return err
	}
	return refuseDeletingPool(&pool)
}

// refuseDeletingPool is INVALID_STATE for a pool a pools.delete is removing.
func refuseDeletingPool(p *api.Pool) error {
	if p.DeletionRequestedAt != nil {
		return api.Errorf(api.CodeInvalidState, "pool %s is being deleted", p.ID).WithPath("poolId")
	}
	return nil
}
