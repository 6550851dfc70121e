package api

import (
	"errors"
	"fmt"
	"time"
)

// Code is the machine-readable class of a ComputeError.
type Code string

// The error codes of DESIGN.md, one per line with its meaning. Every
// failure on the bus carries exactly one; its wire status, retry and the
// user guide's description are its row of the Catalogue.
const (
	CodeInvalidInput        Code = "INVALID_INPUT"        // the request is malformed or names nothing
	CodeInvalidConfig       Code = "INVALID_CONFIG"       // a config does not fit its manifest
	CodeNotFound            Code = "NOT_FOUND"            // no such record or machine
	CodeAlreadyExists       Code = "ALREADY_EXISTS"       // a name is taken
	CodeConflict            Code = "CONFLICT"             // a stale version
	CodeAccessDenied        Code = "ACCESS_DENIED"        // not the caller's
	CodeUnsupported         Code = "UNSUPPORTED"          // the provider cannot do that
	CodeInvalidState        Code = "INVALID_STATE"        // not in the current state
	CodeCapacityUnavailable Code = "CAPACITY_UNAVAILABLE" // the provider has no room
	CodeRateLimited         Code = "RATE_LIMITED"         // a rate limit is spent (retryAfterMs)
	CodeProviderError       Code = "PROVIDER_ERROR"       // the provider API failed (status, code)
	CodeUnavailable         Code = "UNAVAILABLE"          // no service answered in time
	CodeInternal            Code = "INTERNAL"             // a bug
)

// Detail keys with a fixed meaning.
const (
	// DetailPath names the offending field as a dotted path ("config.token", "flavors[0].offerId").
	DetailPath = "path"
	// DetailRetryAfterMs is the wait in milliseconds a RATE_LIMITED caller must honour.
	DetailRetryAfterMs = "retryAfterMs"
	// DetailStatus is the HTTP status a provider API answered (PROVIDER_ERROR).
	DetailStatus = "status"
	// DetailCode is the error code a provider API answered (PROVIDER_ERROR).
	DetailCode = "code"
	// DetailHolderID, DetailHolderKey and DetailHolderState describe, on a
	// create refused because the machine name is taken, the machine that
	// holds the name when this system manages it: its id, its idempotency
	// key (as the provider reports it) and its state (State*); or, with
	// only the state StateDeleted, a holder gone by the time the provider
	// looked it up (the name is free now). See ComputeError.NameHolder.
	DetailHolderID    = "holderId"
	DetailHolderKey   = "holderIdempotencyKey"
	DetailHolderState = "holderState"
	// DetailNotExecuted (true) marks the error of a provider call that
	// provably changed nothing: every request of it that could change
	// something was refused by the API before acting (a lock, a conflict, a
	// rate limit: an HTTP 4xx) or never sent (the connection was refused).
	// Sending the call again cannot make it run twice. Absent means the
	// call may have acted (a reply lost, a timeout, a failed action).
	DetailNotExecuted = "notExecuted"
	// DetailPermanent (true) marks, on a code that is not Terminal (a
	// PROVIDER_ERROR), a refusal the same request can never get past: the
	// provider decides (e.g. Hetzner's 422 invalid_input for an unknown
	// image), the reconciler fails the instance on it. Absent means the
	// request may pass later. See ComputeError.Permanent.
	DetailPermanent = "permanent"
)

// NameHolder is the managed machine holding a name a create asked for.
type NameHolder struct {
	ID             string
	IdempotencyKey string
	State          string
}

// WithNameHolder returns e with the DetailHolder* details of h (e is
// modified and returned).
func (e *ComputeError) WithNameHolder(h NameHolder) *ComputeError {
	return e.With(DetailHolderID, h.ID).With(DetailHolderKey, h.IdempotencyKey).With(DetailHolderState, h.State)
}

// NameHolder is the machine the DetailHolder* details name, and whether
// they name one.
func (e *ComputeError) NameHolder() (NameHolder, bool) {
	id, _ := e.Details[DetailHolderID].(string)
	key, _ := e.Details[DetailHolderKey].(string)
	state, _ := e.Details[DetailHolderState].(string)
	return NameHolder{ID: id, IdempotencyKey: key, State: state}, id != "" || state != ""
}

// ComputeError is the error of every service call: a Code, a human message and
// optional details (see the Detail* keys). It travels as
// {"error":{"code","message","details"}} on the bus.
type ComputeError struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Error implements error as "CODE: message".
func (e *ComputeError) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds a ComputeError with a formatted message and no details.
func Errorf(code Code, format string, args ...any) *ComputeError {
	return &ComputeError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns e with details[key] set to value (e is modified and returned).
func (e *ComputeError) With(key string, value any) *ComputeError {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// InvalidInput is INVALID_INPUT naming the offending field path in details.path.
func InvalidInput(path, format string, args ...any) *ComputeError {
	return Errorf(CodeInvalidInput, format, args...).With(DetailPath, path)
}

// InvalidConfig is INVALID_CONFIG naming the offending field path in details.path.
func InvalidConfig(path, format string, args ...any) *ComputeError {
	return Errorf(CodeInvalidConfig, format, args...).With(DetailPath, path)
}

// NotFound is NOT_FOUND for the resource kind and id, e.g. NotFound("pool", "pool_01…").
func NotFound(kind, id string) *ComputeError {
	return Errorf(CodeNotFound, "%s %q not found", kind, id).With("id", id)
}

// RateLimited is RATE_LIMITED with details.retryAfterMs set to retryAfter in
// whole milliseconds (never negative).
func RateLimited(retryAfter time.Duration, format string, args ...any) *ComputeError {
	ms := retryAfter.Milliseconds()
	if ms < 0 {
		ms = 0
	}
	return Errorf(CodeRateLimited, format, args...).With(DetailRetryAfterMs, ms)
}

// ProviderError is PROVIDER_ERROR with the provider API's HTTP status and error
// code in details (status 0 and code "" when the API could not be reached).
func ProviderError(status int, code, format string, args ...any) *ComputeError {
	return Errorf(CodeProviderError, format, args...).With(DetailStatus, status).With(DetailCode, code)
}

// AsComputeError returns err as a *ComputeError: itself if it is one (or wraps
// one), INTERNAL with err's text otherwise, nil for nil. A nil *ComputeError
// held in a non-nil error (a typed nil) is INTERNAL, so callers never get nil
// for a non-nil error.
func AsComputeError(err error) *ComputeError {
	if err == nil {
		return nil
	}
	var ce *ComputeError
	if errors.As(err, &ce) {
		if ce == nil {
			return Errorf(CodeInternal, "nil *ComputeError returned as an error")
		}
		return ce
	}
	return &ComputeError{Code: CodeInternal, Message: err.Error()}
}

// CodeOf is the Code of err (INTERNAL for foreign errors, "" for nil).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return AsComputeError(err).Code
}

// IsCode reports whether err is a ComputeError with one of codes.
func IsCode(err error, codes ...Code) bool {
	c := CodeOf(err)
	for _, want := range codes {
		if c == want {
			return true
		}
	}
	return false
}

// RetryAfter is details.retryAfterMs as a duration (0 when absent). JSON
// numbers decode as float64, Go values may be any integer kind: both are read.
func (e *ComputeError) RetryAfter() time.Duration {
	switch v := e.Details[DetailRetryAfterMs].(type) {
	case int64:
		return time.Duration(v) * time.Millisecond
	case int:
		return time.Duration(v) * time.Millisecond
	case float64:
		return time.Duration(v * float64(time.Millisecond))
	}
	return 0
}

// NotExecuted reports whether details.notExecuted is true: the provider
// proves the call changed nothing.
func (e *ComputeError) NotExecuted() bool {
	v, _ := e.Details[DetailNotExecuted].(bool)
	return v
}

// Path is details.path ("" when absent).
func (e *ComputeError) Path() string {
	p, _ := e.Details[DetailPath].(string)
	return p
}

// APIStatus is the provider API's HTTP status of a PROVIDER_ERROR
// (details.status, whether set in-process as an int or decoded from a reply
// as a number), and its error code (details.code); 0 and "" when absent.
func (e *ComputeError) APIStatus() (status int, code string) {
	switch v := e.Details[DetailStatus].(type) {
	case float64:
		status = int(v)
	case int:
		status = v
	}
	code, _ = e.Details[DetailCode].(string)
	return status, code
}
