package reconciler

import (
	"net/http"

	"better-compute.io/compute/pkg/api"
)

// quotaCode is the provider API code of a refusal for the account's quota
// (Hetzner Cloud: 403 resource_limit_exceeded, "server limit exceeded").
const quotaCode = "resource_limit_exceeded"

// failureReason is the condition reason of a failure: QuotaExceeded for a
// PROVIDER_ERROR whose API refused for the account's quota (HTTP 403,
// code resource_limit_exceeded), else the code's (api.ReasonOf).
func failureReason(ce *api.ComputeError) api.ConditionReason {
	if status, code := ce.APIStatus(); ce.Code == api.CodeProviderError && status == http.StatusForbidden && code == quotaCode {
		return api.ReasonQuotaExceeded
	}
	return api.ReasonOf(ce.Code)
}
