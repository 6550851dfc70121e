package api

import "slices"

// Retry is how the reconciler treats a failure of a code: the "retry"
// column of the catalogue.
type Retry string

// The ways a failure is retried.
const (
	// RetryNever fails the instance for its generation (phase Failed): the
	// same request cannot pass.
	RetryNever Retry = "never"
	// RetryBackoff retries with exponential backoff (the reconciler's
	// RetryPolicy).
	RetryBackoff Retry = "backoff"
	// RetryAfterReset retries with backoff, never sooner than
	// details.retryAfterMs.
	RetryAfterReset Retry = "after retryAfterMs"
)

// CodeInfo is one row of the error catalogue: a code, the numeric
// Nats-Service-Error-Code header of its replies (the HTTP status a REST API
// would answer), how the reconciler retries it (before details.permanent,
// see ComputeError.Permanent), whether it means the provider refused a
// call before acting (see ComputeError.Refused), and its meaning as the
// user guide prints it.
type CodeInfo struct {
	Code Code
	// Status is the Nats-Service-Error-Code header, an HTTP status number.
	Status int
	// Retry is how the reconciler retries the code.
	Retry Retry
	// Refusal: the provider declined the call before acting.
	Refusal bool
	// Description is the meaning, in Markdown (the user guide's column).
	Description string
}

// catalogue is every Code with its wire status, retry and meaning, in the
// order of DESIGN.md: the one table Terminal, the bus's StatusOf and the
// user guide's error table come from (TestCatalogue keeps them in step).
var catalogue = []CodeInfo{
	{CodeInvalidInput, 400, RetryNever, true, "the request is malformed or names something that does not exist (`details.path`)"},
	{CodeInvalidConfig, 422, RetryNever, true, "a config does not fit the provider's manifest (`details.path`)"},
	{CodeNotFound, 404, RetryBackoff, false, "no such record or machine"},
	{CodeAlreadyExists, 409, RetryBackoff, false, "a name is taken"},
	{CodeConflict, 409, RetryBackoff, false, "the version you sent is stale: re-read, then retry"},
	{CodeAccessDenied, 403, RetryBackoff, true, "not yours (another tenant's reference, a VM not managed by us)"},
	{CodeUnsupported, 501, RetryNever, true,
		"the provider cannot do that (e.g. `nmi` on Hetzner), or a reference's secret store is not configured (`details.scheme`)"},
	{CodeInvalidState, 409, RetryNever, true, "not now (deleting, still in use)"},
	{CodeCapacityUnavailable, 507, RetryBackoff, true,
		"the provider has no room, or the tenant's instance quota is reached (`details.limit`, `details.quota`)"},
	{CodeRateLimited, 429, RetryAfterReset, false,
		"the provider's or account's rate limit, or the tenant's rate or list quota, is spent " +
			"(`details.retryAfterMs`; `details.limit`, `details.quota` for a quota)"},
	{CodeProviderError, 502, RetryBackoff, false,
		"the provider API failed (`details.status`, `details.code`; `details.permanent` when the same request can never pass)"},
	{CodeUnavailable, 503, RetryBackoff, false, "no service answered in time (no responder, deadline passed, store unreachable)"},
	{CodeInternal, 500, RetryBackoff, false, "a bug; the message names the request id to find in the logs"},
}

// Catalogue returns a copy of the error catalogue: every Code with its
// wire status, retry and meaning, in the order of DESIGN.md.
func Catalogue() []CodeInfo { return slices.Clone(catalogue) }

// Codes returns every Code, in the order of DESIGN.md (the catalogue's),
// as a new slice.
func Codes() []Code {
	out := make([]Code, len(catalogue))
	for i, row := range catalogue {
		out[i] = row.Code
	}
	return out
}

// unknownCode is the row of a code the catalogue does not list (a newer
// peer's): the wire status of INTERNAL, retried with backoff.
var unknownCode = CodeInfo{Status: 500, Retry: RetryBackoff, Description: "a code this build does not know"}

// Info is c's row of the Catalogue (for a code it does not list: status
// 500, RetryBackoff, not a refusal, with Code set to c).
func (c Code) Info() CodeInfo {
	for _, row := range catalogue {
		if row.Code == c {
			return row
		}
	}
	row := unknownCode
	row.Code = c
	return row
}

// Terminal reports whether the reconciler fails an instance on this code
// instead of retrying (its Catalogue row says RetryNever): INVALID_INPUT,
// INVALID_CONFIG, UNSUPPORTED and INVALID_STATE.
func (c Code) Terminal() bool { return c.Info().Retry == RetryNever }

// Permanent reports whether e can never pass when sent again: its code is
// Terminal, or the provider marked it details.permanent (an API refusal of
// the request itself, e.g. Hetzner's 422 invalid_input for an unknown
// image). The provider decides; callers classify on this alone.
func (e *ComputeError) Permanent() bool {
	if e.Code.Terminal() {
		return true
	}
	return e.Details.Permanent
}

// Refused reports whether e is a refusal: the provider looked at the call
// and declined it before acting, so a refused create made no machine (and
// found none with its key). Its code is a refusal in the Catalogue
// (INVALID_INPUT, INVALID_CONFIG, ACCESS_DENIED, UNSUPPORTED,
// INVALID_STATE, CAPACITY_UNAVAILABLE), it is Permanent, or it is a
// PROVIDER_ERROR whose API answered an HTTP 4xx other than 408 (timeout)
// and 429 (rate limit).
func (e *ComputeError) Refused() bool {
	if e.Code.Info().Refusal || e.Permanent() {
		return true
	}
	status, _ := e.APIStatus()
	return e.Code == CodeProviderError && status >= 400 && status < 500 && status != 408 && status != 429
}
