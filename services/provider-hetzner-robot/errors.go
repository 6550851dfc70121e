package robot

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/syself/hrobot-go/models"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Error codes of the webservice this provider tells apart (hrobot-go's
// models.ErrorCode values, and one it lacks).
const (
	// CodeBlocked is the code of a reply to an address blocked after
	// repeated bad logins. Guess: the docs do not say what a blocked
	// address receives (see the emulator).
	CodeBlocked models.ErrorCode = "BLOCKED"
	// codeUnreachable is details.code of a PROVIDER_ERROR for a webservice
	// that could not be reached.
	codeUnreachable = "unreachable"
)

// BlockRetryAfter is the wait of a blocked address whose reply names no
// time: the documented block (10 minutes).
const BlockRetryAfter = 10 * time.Minute

// BadLoginLimitGuess is the observed limit of a blocked account: the
// failed logins that block it (Robot's docs: 3).
const BadLoginLimitGuess = 3

// defaultLimitRetryAfter is the wait of a RATE_LIMIT_EXCEEDED without an
// interval: the documented window of every limit.
const defaultLimitRetryAfter = time.Hour

// mapFailure turns a failed request (its HTTP status and error body)
// into a ComputeError:
//   - RATE_LIMIT_EXCEEDED (403) → RATE_LIMITED, retryAfterMs = interval
//     seconds (the window may have just started: Guess). It is not
//     observed as the account's rate limit: Robot's limits are per
//     endpoint (50 resets an hour, 200 server calls), so one spent limit
//     must not hold the account's other calls;
//   - BLOCKED (403) → RATE_LIMITED, retryAfterMs = blocked_for seconds,
//     else BlockRetryAfter, observed as the account's rate limit spent
//     until then (every call of the account would be refused);
//   - 401 UNAUTHORIZED → PROVIDER_ERROR {401, UNAUTHORIZED} (the
//     credentials are wrong; fixing the secret lets it pass);
//   - 400 INVALID_INPUT, 404 RESET_NOT_AVAILABLE, BOOT_NOT_AVAILABLE →
//     PROVIDER_ERROR, permanent;
//   - anything else → PROVIDER_ERROR with details {status, code}.
//
// SERVER_NOT_FOUND is decided by the callers (absence of a claimed
// server, or a claim of a server not in the account).
func mapFailure(call *provider.Call, status int, f *failureBody, now time.Time) *api.ComputeError {
	code, msg := "", "error reply without a JSON body"
	if f != nil {
		code, msg = f.Error.Code, f.Error.Message
	}
	switch models.ErrorCode(code) {
	case models.ErrorCodeRateLimitExceeded:
		wait, limit := defaultLimitRetryAfter, 0
		if f.Error.Interval > 0 {
			wait = time.Duration(f.Error.Interval) * time.Second
		}
		limit = f.Error.MaxRequest
		return api.RateLimited(wait, "hetzner-robot: request limit of this endpoint reached (%d per %s), retry in %s",
			limit, wait, wait)
	case CodeBlocked:
		wait := BlockRetryAfter
		if f.Error.BlockedFor > 0 {
			wait = time.Duration(f.Error.BlockedFor) * time.Second
		}
		// The whole account (its address) is blocked: every caller of it waits.
		call.ObserveRateLimit(api.RateLimit{Limit: BadLoginLimitGuess, Remaining: 0, ResetAt: now.Add(wait)})
		return api.RateLimited(wait, "hetzner-robot: this address is blocked after repeated failed logins, retry in %s", wait)
	}
	ce := api.ProviderError(status, code, "hetzner-robot: %s (HTTP %d, %s)", msg, status, code)
	switch models.ErrorCode(code) {
	case models.ErrorCodeInvalidInput, models.ErrorCodeResetNotAvailable, models.ErrorCodeBootNotAvailable:
		ce.Details.Permanent = true
	}
	return ce
}

// classify turns any error of a session into a ComputeError: those
// already are one pass through; webservice failures go through
// mapFailure; a call that ended with its context is UNAVAILABLE; else
// the webservice was not reached (PROVIDER_ERROR status 0, code
// unreachable). A session that changed nothing (rec.untouched) marks it
// details.notExecuted.
func (s *session) classify(ctx context.Context, call *provider.Call, err error) error {
	if err == nil {
		return nil
	}
	ce := s.mapError(ctx, call, err)
	if s.rec.untouched() {
		ce.Details.NotExecuted = true
	}
	return ce
}

func (s *session) mapError(ctx context.Context, call *provider.Call, err error) *api.ComputeError {
	var ce *api.ComputeError
	if errors.As(err, &ce) {
		return ce
	}
	status, body := s.rec.failure()
	switch {
	case status >= http.StatusBadRequest:
		return mapFailure(call, status, body, call.Clock.Now())
	case ctx.Err() != nil:
		return api.Errorf(api.CodeUnavailable, "hetzner-robot: call ended before the webservice answered: %v", ctx.Err())
	}
	return api.ProviderError(0, codeUnreachable, "hetzner-robot: webservice unreachable: %v", err)
}

// isCode reports whether err is the webservice's error code.
func isCode(err error, code models.ErrorCode) bool {
	var e models.Error
	return errors.As(err, &e) && e.Code == code
}

// notOurs is the ACCESS_DENIED (permanent) of a server this account may
// not touch.
func notOurs(n int, why string) *api.ComputeError {
	ce := api.Errorf(api.CodeAccessDenied, "hetzner-robot: server %d is not ours to touch: %s", n, why)
	ce.Details.Permanent = true
	return ce
}
