package api

import (
	"encoding/json"
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

// ErrorDetails are the details of a ComputeError: each field is one key of
// the wire's "details" object (schemas/v1/error.json), declared in
// alphabetical key order so the JSON is the same bytes the former
// map[string]any encoding sent. A field left at its zero value is not sent,
// except the pointer fields (Code, Path, RetryAfterMs, Status) and the
// NameHolder fields: their constructors send a zero value on purpose
// (InvalidInput("") sends "path":"", ProviderError(0, "") sends status 0 and
// code "", RateLimited(0) sends retryAfterMs 0). Unknown keys in a decoded
// reply are ignored. Every field is a string, an integer, a bool or a list of
// strings, so a ComputeError always encodes.
type ErrorDetails struct {
	// Accounts are the ids of the provider accounts that still reference a
	// secret secrets.delete refused to delete (INVALID_STATE).
	Accounts []string `json:"accounts,omitempty"`
	// Allowed lists the values that exist where one that does not was
	// named: the config fields of the provider for an unknown field
	// (INVALID_CONFIG), the flavors of the pool for an unknown flavor
	// (INVALID_INPUT).
	Allowed []string `json:"allowed,omitempty"`
	// Candidates are the ids of the records a name could mean, when a name
	// used as a handle names several (INVALID_INPUT at path name).
	Candidates []string `json:"candidates,omitempty"`
	// Code is the error code a provider API answered (PROVIDER_ERROR; ""
	// when the API could not be reached). A pointer: ProviderError always
	// sends it.
	Code *string `json:"code,omitempty"`
	// NameHolder (holderId, holderIdempotencyKey, holderState) is, on a
	// create refused because the machine name is taken, the managed machine
	// holding the name; all three keys are sent when it is set. See
	// ComputeError.NameHolder.
	*NameHolder
	// ID is the id of the record or machine a NOT_FOUND names.
	ID string `json:"id,omitempty"`
	// Instances are the ids of the instances that still use a pool
	// pools.delete refused to delete (INVALID_STATE).
	Instances []string `json:"instances,omitempty"`
	// Limit names the tenant's quota a request was refused for, as the
	// tenant record's field ("quotas.instances", "quotas.instancesPerPool",
	// "quotas.createsPerSecond", "quotas.concurrentLists",
	// "quotas.listsPerSecond"): on
	// CAPACITY_UNAVAILABLE (a count at its quota) and RATE_LIMITED (a rate
	// or concurrency quota). See QuotaExceeded.
	Limit string `json:"limit,omitempty"`
	// NotExecuted (true) marks the error of a provider call that provably
	// changed nothing: every request of it that could change something was
	// refused by the API before acting (a lock, a conflict, a rate limit: an
	// HTTP 4xx) or never sent (the connection was refused). Sending the call
	// again cannot make it run twice. Absent means the call may have acted
	// (a reply lost, a timeout, a failed action).
	NotExecuted bool `json:"notExecuted,omitempty"`
	// Path names the offending field as a dotted path ("config.token",
	// "flavors[0].offerId"; "" for the whole body). A pointer: InvalidInput
	// and InvalidConfig send it even when empty. See ComputeError.Path.
	Path *string `json:"path,omitempty"`
	// Permanent (true) marks, on a code that is not Terminal (a
	// PROVIDER_ERROR), a refusal the same request can never get past: the
	// provider decides (e.g. Hetzner's 422 invalid_input for an unknown
	// image), the reconciler fails the instance on it. Absent means the
	// request may pass later. See ComputeError.Permanent.
	Permanent bool `json:"permanent,omitempty"`
	// Pools are the ids of the pools that still use a provider account
	// accounts.delete refused to delete, or whose access.privateKey names a
	// secret secrets.delete refused to delete (INVALID_STATE).
	Pools []string `json:"pools,omitempty"`
	// Quota is the value of the quota Limit names (always with Limit).
	Quota int64 `json:"quota,omitempty"`
	// Reason says, in words, why a NOT_FOUND found nothing (e.g. "no
	// server carries the idempotency key").
	Reason string `json:"reason,omitempty"`
	// RetryAfterMs is the wait in milliseconds a RATE_LIMITED caller must
	// honour (never negative). A pointer: RateLimited always sends it, and
	// the schema requires it on RATE_LIMITED. See ComputeError.RetryAfter.
	RetryAfterMs *int64 `json:"retryAfterMs,omitempty"`
	// Scheme is the secret reference scheme ("secret", "env", "vault") no
	// configured store serves (INVALID_INPUT at path ref).
	Scheme string `json:"scheme,omitempty"`
	// Scope is the scope (api.Scopes) a credential lacks for the verb it
	// called (ACCESS_DENIED, reported by the caller's client when
	// nats-server refused the publish).
	Scope string `json:"scope,omitempty"`
	// Status is the HTTP status a provider API answered (PROVIDER_ERROR; 0
	// when the API could not be reached). A pointer: ProviderError always
	// sends it. See ComputeError.APIStatus.
	Status *int `json:"status,omitempty"`
	// Version is the version a record is at when an update named another
	// (CONFLICT at path version).
	Version int64 `json:"version,omitempty"`
}

// NameHolder is the managed machine holding a name a create asked for: its
// id, its idempotency key (as the provider reports it) and its state
// (State*); or, with only the state StateDeleted, a holder gone by the time
// the provider looked it up (the name is free now). On the wire it is the
// details keys holderId, holderIdempotencyKey and holderState.
type NameHolder struct {
	ID             string `json:"holderId"`
	IdempotencyKey string `json:"holderIdempotencyKey"`
	State          string `json:"holderState"`
}

// WithNameHolder returns e with details naming the holder h (e is modified
// and returned).
func (e *ComputeError) WithNameHolder(h NameHolder) *ComputeError {
	e.Details.NameHolder = &h
	return e
}

// WithPath returns e with details.path set to path (e is modified and
// returned).
func (e *ComputeError) WithPath(path string) *ComputeError {
	e.Details.Path = &path
	return e
}

// NameHolder is the machine the details name as the holder of a name, and
// whether they name one (an id or a state).
func (e *ComputeError) NameHolder() (NameHolder, bool) {
	if h := e.Details.NameHolder; h != nil {
		return *h, h.ID != "" || h.State != ""
	}
	return NameHolder{}, false
}

// ComputeError is the error of every service call: a Code, a human message and
// optional details (see ErrorDetails; not sent when all are zero). It
// travels as {"error":{"code","message","details"}} on the bus.
type ComputeError struct {
	Code    Code         `json:"code"`
	Message string       `json:"message"`
	Details ErrorDetails `json:"details,omitzero"`
}

// Error implements error as "CODE: message".
func (e *ComputeError) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds a ComputeError with a formatted message and no details.
func Errorf(code Code, format string, args ...any) *ComputeError {
	return &ComputeError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidInput is INVALID_INPUT naming the offending field path in details.path.
func InvalidInput(path, format string, args ...any) *ComputeError {
	return Errorf(CodeInvalidInput, format, args...).WithPath(path)
}

// InvalidConfig is INVALID_CONFIG naming the offending field path in details.path.
func InvalidConfig(path, format string, args ...any) *ComputeError {
	return Errorf(CodeInvalidConfig, format, args...).WithPath(path)
}

// NotFound is NOT_FOUND for the resource kind and id, e.g. NotFound("pool", "pool_01…").
func NotFound(kind, id string) *ComputeError {
	e := Errorf(CodeNotFound, "%s %q not found", kind, id)
	e.Details.ID = id
	return e
}

// RateLimited is RATE_LIMITED with details.retryAfterMs set to retryAfter in
// whole milliseconds (never negative).
func RateLimited(retryAfter time.Duration, format string, args ...any) *ComputeError {
	ms := retryAfter.Milliseconds()
	if ms < 0 {
		ms = 0
	}
	e := Errorf(CodeRateLimited, format, args...)
	e.Details.RetryAfterMs = &ms
	return e
}

// QuotaExceeded is CAPACITY_UNAVAILABLE for a tenant's count quota
// (limit is its field in the tenant record, e.g. "quotas.instances"; quota
// its value), with details.limit and details.quota set. A create refused so
// wrote nothing.
func QuotaExceeded(limit string, quota int64, format string, args ...any) *ComputeError {
	return Errorf(CodeCapacityUnavailable, format, args...).WithLimit(limit, quota)
}

// WithLimit returns e with details naming the tenant's quota limit and its
// value quota (e is modified and returned).
func (e *ComputeError) WithLimit(limit string, quota int64) *ComputeError {
	e.Details.Limit, e.Details.Quota = limit, quota
	return e
}

// ProviderError is PROVIDER_ERROR with the provider API's HTTP status and error
// code in details (status 0 and code "" when the API could not be reached).
func ProviderError(status int, code, format string, args ...any) *ComputeError {
	e := Errorf(CodeProviderError, format, args...)
	e.Details.Status, e.Details.Code = &status, &code
	return e
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

// RetryAfter is details.retryAfterMs as a duration (0 when absent).
func (e *ComputeError) RetryAfter() time.Duration {
	if ms := e.Details.RetryAfterMs; ms != nil && *ms > 0 { // a negative wait from a peer is none
		return time.Duration(*ms) * time.Millisecond
	}
	return 0
}

// NotExecuted reports whether details.notExecuted is true: the provider
// proves the call changed nothing.
func (e *ComputeError) NotExecuted() bool { return e.Details.NotExecuted }

// Path is details.path ("" when absent).
func (e *ComputeError) Path() string {
	if p := e.Details.Path; p != nil {
		return *p
	}
	return ""
}

// APIStatus is the provider API's HTTP status of a PROVIDER_ERROR
// (details.status) and its error code (details.code); 0 and "" when absent.
func (e *ComputeError) APIStatus() (status int, code string) {
	if s := e.Details.Status; s != nil {
		status = *s
	}
	if c := e.Details.Code; c != nil {
		code = *c
	}
	return status, code
}

// MapStrings is d with f applied to every string it holds, in every field
// (e.g. to cut secret values out of a provider's text before it is sent).
func (d ErrorDetails) MapStrings(f func(string) string) ErrorDetails {
	str := func(p *string) *string {
		if p == nil {
			return nil
		}
		s := f(*p)
		return &s
	}
	list := func(l []string) []string {
		if l == nil {
			return nil
		}
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = f(s)
		}
		return out
	}
	out := d
	out.Accounts, out.Instances, out.Pools = list(d.Accounts), list(d.Instances), list(d.Pools)
	out.Allowed, out.Candidates = list(d.Allowed), list(d.Candidates)
	out.Code, out.Path = str(d.Code), str(d.Path)
	out.ID, out.Reason, out.Scheme, out.Scope = f(d.ID), f(d.Reason), f(d.Scheme), f(d.Scope)
	out.Limit = f(d.Limit)
	if h := d.NameHolder; h != nil {
		out.NameHolder = &NameHolder{ID: f(h.ID), IdempotencyKey: f(h.IdempotencyKey), State: f(h.State)}
	}
	return out
}

// String is d as its wire JSON, so a %v of the details reads as sent.
func (d ErrorDetails) String() string {
	b, _ := json.Marshal(d) // cannot fail: see ErrorDetails
	return string(b)
}

// GoString is String, so a %#v of an error shows the details' values, not
// their pointers.
func (d ErrorDetails) GoString() string { return d.String() }
