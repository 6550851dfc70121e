package hetzner

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// codeUnreachable is details.code of a PROVIDER_ERROR for an API that could
// not be reached (transport error, connection dropped before a reply).
const codeUnreachable = "unreachable"

// defaultRetryAfter is the wait of a 429 without a RateLimit-Reset header.
const defaultRetryAfter = time.Second

// QuotaRetryAfter is details.retryAfterMs of a create refused for the
// project's quota (403 resource_limit_exceeded, e.g. "server limit
// exceeded"): the quota only moves when the operator raises it or servers
// go, so the caller waits this long instead of retrying at once.
const QuotaRetryAfter = 10 * time.Minute

// apiFailure is what the API answered to a failed request.
type apiFailure struct {
	status  int
	code    string
	message string
	// reset is RateLimit-Reset (zero when the reply had none).
	reset time.Time
}

// mapFailure turns an API failure into a ComputeError:
//   - 429 or rate_limit_exceeded → RATE_LIMITED, retryAfterMs = reset − now
//     (at least 0; 1000 without a reset);
//   - 404 of a server-scoped call (serverID set) → NOT_FOUND of the server;
//   - 403 resource_limit_exceeded (the project's quota) → PROVIDER_ERROR
//     {403, resource_limit_exceeded} with retryAfterMs = QuotaRetryAfter;
//   - anything else → PROVIDER_ERROR with details {status, code}, and
//     permanent when the same request can never pass (see providerError).
func mapFailure(f apiFailure, serverID string, now time.Time) *api.ComputeError {
	switch {
	case f.status == http.StatusTooManyRequests || f.code == string(hcloud.ErrorCodeRateLimitExceeded):
		wait := defaultRetryAfter
		if !f.reset.IsZero() {
			wait = max(f.reset.Sub(now), 0)
		}
		return api.RateLimited(wait, "hetzner-cloud: project rate limit exceeded, retry in %s", wait.Round(time.Millisecond))
	case f.status == http.StatusNotFound && serverID != "":
		return api.NotFound("server", serverID)
	case f.status == http.StatusForbidden && f.code == string(hcloud.ErrorCodeResourceLimitExceeded):
		ce := providerError(f.status, f.code, "hetzner-cloud: project quota reached: %s (HTTP %d, %s); retry in %s",
			f.message, f.status, f.code, QuotaRetryAfter)
		wait := QuotaRetryAfter.Milliseconds()
		ce.Details.RetryAfterMs = &wait
		return ce
	}
	return providerError(f.status, f.code, "hetzner-cloud: %s (HTTP %d, %s)", f.message, f.status, f.code)
}

// providerError is the PROVIDER_ERROR of an API answer (status, code),
// marked details.permanent when the same request can never pass: HTTP 400,
// 422 other than service_error (an unknown image, an invalid field), or
// 409 uniqueness_error (the name belongs to another server; names are
// unique per project). Refusals that can pass later (403 quota, 409
// conflict, 412 no capacity, 422 service_error, 423 locked) are not.
func providerError(status int, code, format string, args ...any) *api.ComputeError {
	ce := api.ProviderError(status, code, format, args...)
	switch {
	case status == http.StatusBadRequest,
		status == http.StatusUnprocessableEntity && code != string(hcloud.ErrorCodeServiceError),
		status == http.StatusConflict && code == string(hcloud.ErrorCodeUniquenessError):
		ce.Details.Permanent = true
	}
	return ce
}

// classify turns any error of an API call into a ComputeError (see
// mapError) and marks it details.notExecuted when no request of the call
// may have changed anything (rec.untouched): Hetzner refuses a request
// with a 4xx before acting on it.
func classify(ctx context.Context, err error, rec *recorder, serverID string, now time.Time) error {
	if err == nil {
		return nil
	}
	ce := mapError(ctx, err, rec, serverID, now)
	if rec.untouched() {
		ce.Details.NotExecuted = true
	}
	return ce
}

// refusedOrUnsent reports whether a request's outcome (resp, err from the
// transport) proves it did not act: a 4xx reply, or a connection that was
// never made (nothing was sent).
func refusedOrUnsent(resp *http.Response, err error) bool {
	if err != nil {
		return provider.Unsent(err)
	}
	return resp.StatusCode >= 400 && resp.StatusCode < 500
}

// mapError turns any error of an API call into a ComputeError: those
// already are one pass through; hcloud.Error and bare error statuses are
// mapped by mapFailure with the status and reset of the last reply (rec);
// a call that ended with its context is UNAVAILABLE; any other failure
// means the API was not reached: PROVIDER_ERROR status 0, code unreachable.
func mapError(ctx context.Context, err error, rec *recorder, serverID string, now time.Time) *api.ComputeError {
	var ce *api.ComputeError
	if errors.As(err, &ce) {
		return ce
	}
	status, reset := rec.last()
	var herr hcloud.Error
	switch {
	case errors.As(err, &herr):
		return mapFailure(apiFailure{status: status, code: string(herr.Code), message: withInvalidFields(herr), reset: reset}, serverID, now)
	case errors.Is(err, hcloud.ErrStatusCode):
		return mapFailure(apiFailure{status: status, message: "error reply without a JSON body", reset: reset}, serverID, now)
	case ctx.Err() != nil:
		return api.Errorf(api.CodeUnavailable, "hetzner-cloud: call ended before the API answered: %v", ctx.Err())
	}
	return providerError(0, codeUnreachable, "hetzner-cloud: API unreachable: %v", err)
}

// withInvalidFields is the message of an API error, followed for
// invalid_input by the fields the API named and why
// ("invalid input in field image (image not found)"), so the caller
// learns which of its values to change.
func withInvalidFields(herr hcloud.Error) string {
	details, ok := herr.Details.(hcloud.ErrorDetailsInvalidInput)
	if !ok || len(details.Fields) == 0 {
		return herr.Message
	}
	parts := make([]string, 0, len(details.Fields))
	for _, f := range details.Fields {
		parts = append(parts, f.Name+" ("+strings.Join(f.Messages, "; ")+")")
	}
	return herr.Message + ": " + strings.Join(parts, ", ")
}
