package reconciler

import (
	"context"

	"better-compute.io/compute/pkg/api"
)

// nameBeingFreed reports whether a create refused because its machine name
// is taken waits for a name that is being given up, so the refusal is
// transient and retried with backoff: the provider names the holder as a
// machine this system manages (api.NameHolder), and that machine is being
// deleted (or already gone), or it belongs to an instance of the tenant
// being deleted (whose delete is not sent yet). A holder that is none of
// these (another live instance, a machine made by another tool) keeps the
// refusal permanent. A holder gone with no id (the name was free again
// when the provider looked) is transient for maxNameFreedRetries failed
// attempts in a row, then permanent: a uniqueness refusal that is not about
// the name (another unique field) would otherwise be retried forever. A
// state store failure counts as transient: the next pass decides.
// maxNameFreedRetries is how many failed creates in a row a name found free
// again after its refusal is retried.
const maxNameFreedRetries = 5

func (r *Reconciler) nameBeingFreed(ctx context.Context, t *scope, ce *api.ComputeError) bool {
	holder, named := ce.NameHolder()
	switch {
	case !named:
		return false
	case holder.State == string(api.StateDeleted) && holder.ID == "":
		return t.inst.Status.Retries < maxNameFreedRetries
	case holder.State == string(api.StateDeleting) || holder.State == string(api.StateDeleted):
		return true
	case holder.IdempotencyKey == t.inst.ID || !api.ValidID(api.PrefixInstance, holder.IdempotencyKey):
		return false
	}
	owner, _, err := r.instances.Get(ctx, t.inst.TenantID, holder.IdempotencyKey)
	if err != nil {
		return !api.IsCode(err, api.CodeNotFound)
	}
	return owner.DeletionRequestedAt != nil
}
