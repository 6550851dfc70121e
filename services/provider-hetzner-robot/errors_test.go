package robot

import (
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

func body(code string, maxReq, interval, blockedFor int) *failureBody {
	f := &failureBody{}
	f.Error.Code, f.Error.Message, f.Error.MaxRequest, f.Error.Interval, f.Error.BlockedFor = code, "m", maxReq, interval, blockedFor
	return f
}

// TestMapFailure is mapFailure's doc comment as a table.
func TestMapFailure(t *testing.T) {
	now := testStart
	cases := []struct {
		name      string
		status    int
		body      *failureBody
		code      api.Code
		retry     time.Duration
		permanent bool
		apiStatus int
	}{
		{"rate limit", 403, body("RATE_LIMIT_EXCEEDED", 50, 3600, 0), api.CodeRateLimited, time.Hour, false, 0},
		{"rate limit, no interval", 403, body("RATE_LIMIT_EXCEEDED", 0, 0, 0), api.CodeRateLimited, time.Hour, false, 0},
		{"blocked", 403, body("BLOCKED", 0, 0, 120), api.CodeRateLimited, 2 * time.Minute, false, 0},
		{"blocked, no time", 403, body("BLOCKED", 0, 0, 0), api.CodeRateLimited, BlockRetryAfter, false, 0},
		{"bad login", 401, body("UNAUTHORIZED", 0, 0, 0), api.CodeProviderError, 0, false, 401},
		{"invalid input", 400, body("INVALID_INPUT", 0, 0, 0), api.CodeProviderError, 0, true, 400},
		{"no reset", 404, body("RESET_NOT_AVAILABLE", 0, 0, 0), api.CodeProviderError, 0, true, 404},
		{"manual reset running", 409, body("RESET_MANUAL_ACTIVE", 0, 0, 0), api.CodeProviderError, 0, false, 409},
		{"no body", 500, nil, api.CodeProviderError, 0, false, 500},
	}
	for _, tc := range cases {
		call := &provider.Call{Clock: nil}
		ce := mapFailure(call, tc.status, tc.body, now)
		st, _ := ce.APIStatus()
		if ce.Code != tc.code || ce.RetryAfter() != tc.retry || ce.Details.Permanent != tc.permanent || st != tc.apiStatus {
			t.Errorf("%s: %s retry %s permanent %v status %d; want %s %s %v %d", tc.name, ce.Code, ce.RetryAfter(),
				ce.Details.Permanent, st, tc.code, tc.retry, tc.permanent, tc.apiStatus)
		}
	}
}
