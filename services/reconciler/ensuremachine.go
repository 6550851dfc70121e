package reconciler

import (
	"context"
	"slices"

	"better-compute.io/compute/pkg/api"
)

// ensureMachine is the live path's first phase: the recorded machine, or
// one created now (createMachine) when none is recorded.
func (r *Reconciler) ensureMachine(ctx context.Context, s *scope) (step, error) {
	if m := s.inst.Status.Machine; m != nil {
		s.machine = m
		return next, nil
	}
	m, err := r.createMachine(ctx, s)
	if err != nil {
		return next, err
	}
	s.machine, s.created = m, true
	return next, nil
}

// createMachine creates the machine (idempotently, keyed by the instance
// id), recording first that a create was requested, and records the
// machine its provider answered. Errors: the provider's, or a storeError.
func (r *Reconciler) createMachine(ctx context.Context, s *scope) (*api.ExternalMachine, error) {
	// A static address is recorded and claimed before any create is sent
	// (see address.go): every attempt of the key carries the same one.
	addr, err := r.ensureAddress(ctx, s)
	if err != nil {
		return nil, err
	}
	if r.o.Hooks.AfterAddressClaim != nil && addr != nil {
		r.o.Hooks.AfterAddressClaim(s.inst.ID)
	}
	// Every attempt is recorded before it is sent (CreateRequestedAt): a
	// deletion waits for the last one to have ended before it concludes
	// that no machine carries the key (see deleteUnrecorded).
	first := false
	if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
		// Only the write that flips the flag makes this the first attempt
		// (a replica racing us sees it set when its CAS write retries).
		first = !st.CreateRequested
		now := r.now()
		st.CreateRequested, st.CreateRequestedAt = true, &now
	}); err != nil {
		return nil, err
	}
	// A reinstall requested before the machine was (re)made is done by
	// creating it with the reinstall's image: only on a first attempt, when
	// no earlier create of the key can answer with a machine of the old one.
	image, reinstall := s.inst.Image, unclaimedReinstall(&s.inst)
	if reinstall != nil && first {
		image = reinstall.Image
	} else {
		reinstall = nil
	}
	labels := appliedLabels(s.inst.Labels)
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	spec := api.MachineSpec{Name: s.inst.Name, OfferID: s.offerID, Image: image, UserData: s.inst.UserData,
		SSHKeys: machineSSHKeys(&s.inst, s.access), Labels: labels}
	withPoolNetwork(&spec, s, addr)
	m, err := s.remote.CreateRequest(cctx, api.ProviderCreateRequest{Account: s.account, IdempotencyKey: s.inst.ID, FirstAttempt: first,
		Machine: spec})
	if r.o.Hooks.AfterProviderCreate != nil {
		r.o.Hooks.AfterProviderCreate(s.inst.ID)
	}
	// A refused create leaves CreateRequested set: a refusal proves only
	// that this request made nothing, not that no earlier attempt did (a
	// clone made before a later step was refused, a key lookup that got a
	// 4xx). A deletion deletes by key without creating (deleteUnrecorded).
	if err != nil {
		return nil, err
	}
	s.log.Info().Str("machine", m.ID).Str("state", string(m.State)).Str("image", image).Str("region", m.Region).
		Str("placement_note", m.PlacementNote).Msg("provider create answered")
	if err := r.update(ctx, s, func(i *api.Instance) {
		i.Status.Machine, i.Status.Retries, i.Status.Polls = m, 0, 0
		i.Status.AppliedLabels = labels // relabel gives it later changes
		notePlacement(&i.Status, m)
		if op := unclaimedReinstall(i); reinstall != nil && op != nil && op.ID == reinstall.ID {
			now := r.now()
			i.Image = reinstall.Image
			i.Status.LastOperation = &api.OperationStatus{ID: reinstall.ID, Action: reinstall.Action, State: api.OperationSucceeded,
				Message: "the machine was created with image " + reinstall.Image, StartedAt: now, FinishedAt: &now}
		}
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// machineSSHKeys are the SSH keys a machine is created with: the
// tenant's, and the platform's public key where the pool's access names
// one (the key in the provider's SSH key field, never in user data).
func machineSSHKeys(inst *api.Instance, a *api.PoolAccess) []string {
	if a == nil || a.PublicKey == "" || slices.Contains(inst.SSHKeys, a.PublicKey) {
		return inst.SSHKeys
	}
	return append(slices.Clone(inst.SSHKeys), a.PublicKey)
}

// withPoolNetwork gives spec the pool's network and placement, the
// flavor's storage and the machine's static address (nil: none).
func withPoolNetwork(spec *api.MachineSpec, s *scope, addr *api.StaticAddress) {
	spec.PoolID, spec.Address = s.inst.PoolID, addr
	spec.Storage = s.flavor.Storage
	if s.pool != nil {
		spec.Network, spec.Placement = s.pool.Network, s.pool.Placement
	}
}

// notePlacement records why machine m is not where its pool asked first
// (the Placed condition, api.ConditionPlaced) or, for a machine that is,
// drops the note a machine made before it left.
func notePlacement(st *api.InstanceStatus, m *api.ExternalMachine) {
	if m.PlacementNote != "" {
		setCondition(st, api.Condition{Type: api.ConditionPlaced, Status: api.ConditionTrue,
			Reason: api.ReasonLocationFallback, Message: m.PlacementNote})
		return
	}
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c api.Condition) bool { return c.Type == api.ConditionPlaced })
}
