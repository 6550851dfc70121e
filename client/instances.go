package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// InstanceClient is the instances verbs (services/reconciler) and the
// Wait and Watch helpers.
type InstanceClient struct{ c *Client }

// Create asks for a machine. A repeated create with the same
// IdempotencyKey answers the instance the first one made. Errors:
// INVALID_INPUT naming the field (poolId, flavor, image, name, userData,
// sshKeys, labels[<key>], power), ALREADY_EXISTS (path name) when the pool has an
// instance of that name, INVALID_STATE while the pool is being deleted,
// CONFLICT for a reused idempotency key with another request, UNAVAILABLE.
func (i InstanceClient) Create(ctx context.Context, req api.InstanceCreateRequest) (api.Instance, error) {
	return call[api.Instance](ctx, i.c, bus.ResourceInstances, "create", req)
}

// Get returns instance id with its status. Errors: INVALID_INPUT (path
// id), NOT_FOUND, UNAVAILABLE.
func (i InstanceClient) Get(ctx context.Context, id string) (api.Instance, error) {
	return call[api.Instance](ctx, i.c, bus.ResourceInstances, "get", api.IDRequest{ID: id})
}

// List returns one page of the tenant's instances, optionally of one pool
// or phase, and matching a label selector (req.Selector). Errors:
// INVALID_INPUT (path limit, cursor, poolId, phase, selector), UNAVAILABLE.
func (i InstanceClient) List(ctx context.Context, req api.InstanceListRequest) (api.List[api.Instance], error) {
	return call[api.List[api.Instance]](ctx, i.c, bus.ResourceInstances, "list", req)
}

// All returns every instance of the tenant matching filter (its Limit and
// Cursor are ignored), paging through List.
func (i InstanceClient) All(ctx context.Context, filter api.InstanceListRequest) ([]api.Instance, error) {
	return all(ctx, func(ctx context.Context, cursor string) (api.List[api.Instance], error) {
		filter.Limit, filter.Cursor = pageSize, cursor
		return i.List(ctx, filter)
	})
}

// Delete asks for instance id's deletion: its machine, then its record
// (the reply is the instance, marked for deletion). Errors: INVALID_INPUT
// (path id), NOT_FOUND, UNAVAILABLE.
func (i InstanceClient) Delete(ctx context.Context, id string) (api.Instance, error) {
	return call[api.Instance](ctx, i.c, bus.ResourceInstances, "delete", api.IDRequest{ID: id})
}

// Power asks for a power action: on and off set the desired power, the
// others are one-shot operations. Errors: INVALID_INPUT (path action),
// NOT_FOUND, INVALID_STATE (deleting, an operation pending), UNAVAILABLE.
func (i InstanceClient) Power(ctx context.Context, id string, action api.PowerAction) (api.Instance, error) {
	return call[api.Instance](ctx, i.c, bus.ResourceInstances, "power", api.InstancePowerRequest{ID: id, Action: action})
}

// Reinstall reinstalls instance id with image (it keeps its id). Errors:
// INVALID_INPUT (path image), NOT_FOUND, INVALID_STATE, UNAVAILABLE.
func (i InstanceClient) Reinstall(ctx context.Context, id, image string) (api.Instance, error) {
	return call[api.Instance](ctx, i.c, bus.ResourceInstances, "reinstall", api.InstanceReinstallRequest{ID: id, Image: image})
}

// Update changes instance id's desired spec (instances.update): labels
// (req.Labels non-nil replaces them whole; {} removes them all), image (a
// reinstall) and flavor (a resize); req.ID is set to id. Errors:
// INVALID_INPUT (path id, flavor, image, labels[<key>]), NOT_FOUND,
// CONFLICT (path version: req.Version is not the record's), INVALID_STATE
// (deleting, or an image change while an operation is pending),
// UNAVAILABLE.
func (i InstanceClient) Update(ctx context.Context, id string, req api.InstanceUpdateRequest) (api.Instance, error) {
	req.ID = id
	return call[api.Instance](ctx, i.c, bus.ResourceInstances, "update", req)
}

// Resolve returns the id of the instance handle names: handle itself when
// it is an instance id, else the id of the one instance of the tenant
// called handle. Names are unique per pool, so two pools may each hold
// one. Errors: NOT_FOUND, INVALID_INPUT (details.candidates) when several
// instances have the name.
func (i InstanceClient) Resolve(ctx context.Context, handle string) (string, error) {
	return i.ResolveIn(ctx, "", handle)
}

// ResolveIn is Resolve among the instances of pool poolID only ("" for
// every pool of the tenant): a name is unique there. An instance id is
// returned as it is when poolID is "", else only once instances.get shows
// the instance in pool poolID, so a command never acts on an instance of
// another pool. Errors: those of Resolve and Get, NOT_FOUND (details.id
// the handle) naming the pool when the instance is in another one, and
// INVALID_INPUT (path poolId) for a malformed pool id.
func (i InstanceClient) ResolveIn(ctx context.Context, poolID, handle string) (string, error) {
	if poolID != "" && api.ValidID(api.PrefixInstance, handle) {
		inst, err := i.Get(ctx, handle)
		if err != nil {
			return "", err
		}
		if inst.PoolID != poolID {
			ce := api.Errorf(api.CodeNotFound, "pool %s has no instance %s (it is in pool %s)", poolID, handle, inst.PoolID)
			ce.Details.ID = handle
			return "", ce
		}
		return handle, nil
	}
	return resolve(ctx, api.PrefixInstance, "instance", handle,
		func(ctx context.Context) ([]api.Instance, error) {
			return i.All(ctx, api.InstanceListRequest{PoolID: poolID})
		},
		func(v *api.Instance) (string, string) { return v.ID, v.Name })
}

// watchBuffer is how many events a Watch holds for a slow reader.
const watchBuffer = 256

// Watch follows the events of instance id ("" for every instance of the
// tenant), live from now: core NATS, no replay of older events. The
// channel is closed when ctx ends or the connection closes (for good: a
// revoked credential, Close); events that find it full (watchBuffer
// unread) are dropped by NATS as a slow consumer. Errors: INVALID_INPUT
// (path tenant), and a subscription failure (a permission violation shows
// on the connection's error handler).
func (i InstanceClient) Watch(ctx context.Context, id string) (<-chan api.Event, error) {
	if err := checkTenant(i.c.tenant); err != nil {
		return nil, err
	}
	if id == "" {
		id = "*"
	}
	msgs := make(chan *nats.Msg, watchBuffer)
	sub, err := i.c.nc.ChanSubscribe(bus.Event(i.c.tenant, bus.ResourceInstances, id, "*"), msgs)
	if err != nil {
		return nil, fmt.Errorf("watch instance events: %w", err)
	}
	// a closed connection (revoked credential, client closed) ends the
	// watch: no event can come any more
	closed := i.c.nc.StatusChanged(nats.CLOSED)
	if i.c.nc.IsClosed() { // closed before the listener was there
		closed <- nats.CLOSED
	}
	events := make(chan api.Event, watchBuffer)
	go func() {
		defer close(events)
		defer func() { _ = sub.Unsubscribe() }()
		defer i.c.nc.RemoveStatusListener(closed)
		for {
			select {
			case <-ctx.Done():
				return
			case <-closed:
				return
			case m := <-msgs:
				var ev api.Event
				if json.Unmarshal(m.Data, &ev) != nil {
					continue
				}
				select {
				case events <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return events, nil
}

// Goal decides, from one get of the instance (inst is meaningful only when
// getErr is nil), whether waiting is over (done) or hopeless (err).
type Goal func(inst *api.Instance, getErr error) (done bool, err error)

// Goals of Wait.
var (
	// Running is reached when the instance is Running at its generation.
	Running = PhaseGoal(api.PhaseRunning)
	// Stopped is reached when the instance is Stopped at its generation.
	Stopped = PhaseGoal(api.PhaseStopped)
	// Deleted is reached when the instance is gone (NOT_FOUND).
	Deleted Goal = func(inst *api.Instance, getErr error) (bool, error) {
		if api.IsCode(getErr, api.CodeNotFound) {
			return true, nil
		}
		return false, hopeless(inst, getErr)
	}
)

// PhaseGoal is reached when the instance is in phase with its status
// observed at its generation; it is hopeless when the instance Failed at
// its generation (an error naming its problem condition), or a get fails
// with anything but UNAVAILABLE.
func PhaseGoal(phase api.Phase) Goal {
	return func(inst *api.Instance, getErr error) (bool, error) {
		if getErr != nil {
			return false, hopeless(inst, getErr)
		}
		if inst.Status.Phase == phase && inst.Status.ObservedGeneration == inst.Generation {
			return true, nil
		}
		return false, hopeless(inst, nil)
	}
}

// ConditionGoal is reached when the instance's status, observed at its
// generation, has condition typ with status (e.g. Ready True); it is
// hopeless as PhaseGoal's is.
func ConditionGoal(typ api.ConditionType, status api.ConditionStatus) Goal {
	return func(inst *api.Instance, getErr error) (bool, error) {
		if getErr != nil {
			return false, hopeless(inst, getErr)
		}
		if inst.Status.ObservedGeneration == inst.Generation {
			for _, c := range inst.Status.Conditions {
				if c.Type == typ && c.Status == status {
					return true, nil
				}
			}
		}
		return false, hopeless(inst, nil)
	}
}

// hopeless is the error that ends a wait: a failed get other than
// UNAVAILABLE, or the instance Failed at its generation.
func hopeless(inst *api.Instance, getErr error) error {
	if getErr != nil {
		if api.IsCode(getErr, api.CodeUnavailable) {
			return nil
		}
		return getErr
	}
	if inst.Status.Phase == api.PhaseFailed && inst.Status.ObservedGeneration == inst.Generation {
		return api.Errorf(api.CodeInvalidState, "instance %s failed: %s", inst.ID, Problem(inst))
	}
	return nil
}

// Problem is the first problem condition of inst as "REASON: message[,
// retry at HH:MM:SS]" ("" when none).
func Problem(inst *api.Instance) string {
	for _, c := range inst.Status.Conditions {
		if c.Problem() {
			text := string(c.Reason) + ": " + c.Message
			if c.RetryAt != nil {
				text += ", retry at " + c.RetryAt.Format(time.TimeOnly)
			}
			return text
		}
	}
	return ""
}

// PollInterval is how often Wait gets the instance when no event wakes it.
const PollInterval = time.Second

// Wait gets instance id until goal is reached and returns the last
// instance read (zero for Deleted). It gets it again on each of the
// instance's events and at least every PollInterval; progress, when not
// nil, sees every get. Errors: the goal's (an instance Failed at its
// generation is INVALID_STATE), and ctx.Err() when ctx ends first.
func (i InstanceClient) Wait(ctx context.Context, id string, goal Goal,
	progress func(inst *api.Instance, getErr error)) (api.Instance, error) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	// Without events (e.g. no permission to subscribe) Wait still polls.
	wake, _ := i.Watch(wctx, id)
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		inst, getErr := i.Get(ctx, id)
		if ctx.Err() != nil {
			return api.Instance{}, ctx.Err()
		}
		if progress != nil {
			progress(&inst, getErr)
		}
		done, err := goal(&inst, getErr)
		if err != nil {
			return inst, err
		}
		if done {
			return inst, nil
		}
		select {
		case <-ctx.Done():
			return api.Instance{}, ctx.Err()
		case <-wake:
		case <-tick.C:
		}
	}
}

// Exec runs req.Command on the machine of instance req.ID over SSH with its
// pool's access (instances.exec) and answers its exit code and output (the
// last 64 KiB of each stream). The request's deadline is the client's
// timeout or ctx's: give a command that runs long a longer one. Errors:
// INVALID_STATE (machine not running, pool without access, host key not
// pinned or changed), NOT_FOUND, INVALID_INPUT (path command, timeoutMs).
func (i InstanceClient) Exec(ctx context.Context, req api.InstanceExecRequest) (api.InstanceExecReply, error) {
	return call[api.InstanceExecReply](ctx, i.c, bus.ResourceInstances, "exec", req)
}

// Logs reads the last req.Lines lines of the cloud-init output, journal or
// console of instance req.ID's machine over SSH (instances.logs). Errors:
// as Exec's, INVALID_INPUT (path source, lines).
func (i InstanceClient) Logs(ctx context.Context, req api.InstanceLogsRequest) (api.InstanceLogsReply, error) {
	return call[api.InstanceLogsReply](ctx, i.c, bus.ResourceInstances, "logs", req)
}

// Metrics reads the usage series of instance req.ID's machine (type cpu,
// disk or network over [from, to) every step seconds; instances.metrics).
// Errors: INVALID_INPUT (path id, type, from, to or step), NOT_FOUND,
// INVALID_STATE (no machine), UNSUPPORTED, PROVIDER_ERROR, RATE_LIMITED,
// UNAVAILABLE.
func (i InstanceClient) Metrics(ctx context.Context, req api.InstanceMetricsRequest) (api.Metrics, error) {
	return call[api.Metrics](ctx, i.c, bus.ResourceInstances, "metrics", req)
}
