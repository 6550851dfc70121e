package reconciler

import "better-compute.io/compute/pkg/api"

// createRefused reports whether a create failed because the provider
// refused it (api.ComputeError.Refused: bad input or config, a name held
// by another key, no room for a machine — Proxmox: every VMID slot of the
// key holds another key's VM, so none holds this key's —, an API 4xx
// other than timeout and rate limit): nothing was created.
func createRefused(err error) bool {
	return api.AsComputeError(err).Refused()
}

// permanentRefusal reports whether the same request can never pass
// (api.ComputeError.Permanent: a Terminal code, or a refusal the provider
// marked details.permanent, e.g. Hetzner's 422 for an unknown image or
// 409 uniqueness_error for a name another key holds). The instance then
// fails like on a terminal code, with the provider's message.
func permanentRefusal(ce *api.ComputeError) bool {
	return ce.Permanent()
}
