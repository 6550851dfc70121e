package reconciler

import "better-compute.io/compute/pkg/api"

// createRefused reports whether a create failed because the provider
// refused it (bad input or config, a name held by another key, no room for
// a machine — Proxmox: every VMID slot of the key holds another key's VM,
// so none holds this key's —, an API 4xx other than timeout and rate
// limit): nothing was created.
func createRefused(err error) bool {
	ce := api.AsComputeError(err)
	switch ce.Code {
	case api.CodeInvalidInput, api.CodeInvalidConfig, api.CodeUnsupported, api.CodeInvalidState, api.CodeAccessDenied,
		api.CodeCapacityUnavailable:
		return true
	case api.CodeProviderError:
		status, _ := ce.APIStatus()
		return status >= 400 && status < 500 && status != 408 && status != 429
	}
	return false
}

// permanentRefusal reports whether the provider's API refused a request in
// a way the same request can never pass: HTTP 400, 422 other than Hetzner's
// service_error (an unknown image, an invalid field), or 409
// uniqueness_error (the name belongs to a machine of another key). The
// instance then fails like on a terminal code, with the API's message.
// Refusals that can pass later (403 quota, 409 conflict, 412 no capacity,
// 423 locked) are retried.
func permanentRefusal(ce *api.ComputeError) bool {
	if ce.Code != api.CodeProviderError {
		return false
	}
	status, code := ce.APIStatus()
	return status == 400 || status == 422 && code != "service_error" || status == 409 && code == "uniqueness_error"
}
