package reconciler

import (
	"context"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// livePhases converge an instance nobody asked to delete, in this order;
// each phase is in the file named after it.
func (r *Reconciler) livePhases() []phaseFunc {
	return []phaseFunc{
		r.ensureMachine, // create the machine when none is recorded
		r.observe,       // look at it (not right after its create)
		r.drift,         // a machine gone or going out of band is re-made
		r.operation,     // the pending one-shot operation, at most once
		r.relabel,       // the instance's labels onto the machine, when changed
		r.resize,        // a new flavor: resize the machine, at most once
		r.bootstrap,     // host pools: rescue, install, reboot (bootstrap.go)
		r.setPower,      // power as desired (a change found is drift)
		r.configure,     // over SSH, once per generation (pools with access)
		r.converge,      // record what was seen; look again until converged
	}
}

// deletePhases delete an instance, in this order.
func (r *Reconciler) deletePhases() []phaseFunc {
	return []phaseFunc{
		r.drain,            // the pool's drain step over SSH (pools with access)
		r.wipe,             // a host's disks, where its pool says release.wipe (release.go)
		r.deleteMachine,    // delete the recorded machine; wait until it is gone
		r.deleteUnrecorded, // delete any machine of the key the record does not show
		r.releaseAddress,   // release its static address: no machine of it remains
		r.deleteRecord,     // delete the record
	}
}

// phaseFunc is one phase of a pass: it acts on the instance s names and
// tells the pass to go on (next) or to end with an outcome (end). A
// provider error ends the pass through failed; a state store error
// (storeError) leaves the work message for redelivery.
type phaseFunc func(ctx context.Context, s *scope) (step, error)

// step is what a phase tells the pass.
type step struct {
	end bool
	out outcome
}

// next goes on to the next phase.
var next = step{}

// end ends the pass with out.
func end(out outcome) step { return step{end: true, out: out} }

// run runs phases in order until one ends the pass or fails; a pass whose
// phases all go on is finished.
func (r *Reconciler) run(ctx context.Context, s *scope, phases []phaseFunc) (outcome, error) {
	for _, phase := range phases {
		st, err := phase(ctx, s)
		if err != nil {
			return r.failed(ctx, s, err)
		}
		if st.end {
			return st.out, nil
		}
	}
	return finished, nil
}

// scope is what a pass over one instance knows; its phases read and fill
// it. Each field says when it is set.
type scope struct {
	// inst and rev are the record and its revision: set by reconcile's
	// load, replaced by every write of the pass (writeRecord).
	inst api.Instance
	rev  uint64
	// log names tenant and instance (and, from resolveTarget on, account
	// and provider). Set before any phase.
	log zerolog.Logger
	// remote, account and offerID reach the instance's provider account
	// and name its offer: set by resolveTarget, before any phase.
	remote  provider.Remote
	account api.ProviderAccount
	offerID string
	// flavors are the pool's flavors: set by resolveTarget.
	flavors []api.Flavor
	// machine is the machine the pass works on: set by ensureMachine (the
	// recorded one, or the one its create answered), replaced by observe
	// with what the provider reports (nil: the provider reports none).
	machine *api.ExternalMachine
	// created is set by ensureMachine when this pass created the machine
	// (observe then does not look again).
	created bool
	// observed is set by observe when it asked the provider for the
	// machine in this pass (a waiting bootstrap does not always:
	// bootstrapReadDue).
	observed bool
	// drift is set by power when it corrected a power change made outside
	// the control plane: converge records it.
	drift *api.Condition
	// access is the pool's machine access (nil: none): set by
	// resolveTarget.
	access *api.PoolAccess
	// pool and flavor are the instance's pool and flavor: set by
	// resolveTarget (its network, placement and storage reach the
	// machine spec; its address range is ensureAddress's).
	pool   *api.Pool
	flavor api.Flavor
	// powerRefused is set by setPower when the provider cannot send the
	// power action the desired level needs (UNSUPPORTED: a Robot server
	// without power resets): failed retries it with backoff instead of
	// failing the instance, whose machine is left as it is.
	powerRefused bool
}
