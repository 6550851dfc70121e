package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/egress"
)

// failureKind classifies what PVE answered; it is details.code of the
// PROVIDER_ERROR an HTTP failure becomes.
type failureKind string

// Failure kinds.
const (
	kindAPI            failureKind = "api_error"
	kindUnauthorized   failureKind = "unauthorized"
	kindForbidden      failureKind = "forbidden"
	kindParameter      failureKind = "invalid_parameter"
	kindNodeOffline    failureKind = "node_unreachable"
	kindNoSuchVM       failureKind = "no_such_vm"
	kindExists         failureKind = "vm_exists"
	kindLocked         failureKind = "vm_locked"
	kindNotRunning     failureKind = "not_running"
	kindAlreadyRunning failureKind = "already_running"
	kindRunning        failureKind = "vm_running"
	kindNoAgent        failureKind = "agent_unavailable"
)

// Codes of PROVIDER_ERRORs this provider makes itself (details.code).
const (
	codeUnreachable     = "unreachable"
	codeUnexpectedReply = "unexpected_reply"
	codeTaskTimeout     = "task_timeout"
	// codeStaleClusterList: the cluster list named a template that its
	// config says is not one (the list lags); a retry sees it current.
	codeStaleClusterList = "stale_cluster_list"
)

// failureRules classify a failure by HTTP status (0: any) and message
// (nil: any); the first matching rule wins, no match is kindAPI. The same
// messages come as a synchronous HTTP 500 or as a task's exit status, so
// task failures are classified by the same rules.
var failureRules = []struct {
	status  int
	message *regexp.Regexp
	kind    failureKind
}{
	{http.StatusUnauthorized, nil, kindUnauthorized},
	{http.StatusForbidden, nil, kindForbidden},
	{595, nil, kindNodeOffline},
	{http.StatusBadRequest, nil, kindParameter},
	{0, regexp.MustCompile(`^Configuration file '[^']*' does not exist`), kindNoSuchVM},
	{0, regexp.MustCompile(`config file already exists`), kindExists},
	{0, regexp.MustCompile(`^VM is locked|^can't lock file '/var/lock/qemu-server/`), kindLocked},
	{0, regexp.MustCompile(`^VM \d+ not running`), kindNotRunning},
	{0, regexp.MustCompile(`^VM \d+ already running`), kindAlreadyRunning},
	{0, regexp.MustCompile(`^VM \d+ is running - destroy failed`), kindRunning},
	{0, regexp.MustCompile(`^QEMU guest agent is not running|^No QEMU guest agent configured|` +
		`^VM \d+ is not running|^VM \d+ qmp command 'guest-[^']*' failed`), kindNoAgent},
}

// classifyFailure is the kind of a failure with HTTP status (0 for a
// task) and message.
func classifyFailure(status int, message string) failureKind {
	for _, r := range failureRules {
		if (r.status == 0 || r.status == status) && (r.message == nil || r.message.MatchString(message)) {
			return r.kind
		}
	}
	return kindAPI
}

// pveError is a failure PVE answered: an HTTP error reply (status set), or
// a task that ended with an error exit status (upid set, status 0).
type pveError struct {
	status  int
	message string
	kind    failureKind
	upid    string
}

// Error is the message with the HTTP status or the task.
func (e *pveError) Error() string {
	if e.upid != "" {
		return fmt.Sprintf("task %s failed: %s", e.upid, e.message)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.message, e.status)
}

// httpFailure reads an error reply: the message is the body's "message"
// (PVE 8.3+) or else the reason phrase of statusLine ("500 VM is locked
// (clone)"; PVE before 8.3), followed by the per-parameter "errors" of a
// 400, sorted.
func httpFailure(status int, statusLine string, body []byte) *pveError {
	var reply struct {
		Message any `json:"message"`
		Errors  any `json:"errors"`
	}
	_ = json.Unmarshal(body, &reply) // a body that is not JSON leaves the reason phrase
	msg, _ := reply.Message.(string)
	msg = strings.TrimSpace(msg)
	if msg == "" {
		msg = strings.TrimSpace(strings.TrimPrefix(statusLine, fmt.Sprint(status)))
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if params, ok := reply.Errors.(map[string]any); ok && len(params) > 0 {
		keys := make([]string, 0, len(params))
		for k := range params {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s: %v", k, params[k]))
		}
		msg += " (" + strings.Join(parts, "; ") + ")"
	}
	return &pveError{status: status, message: msg, kind: classifyFailure(status, msg)}
}

// refusalKinds are the failures PVE answers before it acts: the API
// handler, or the task's worker when it starts, takes the VM's lock and
// checks the VM's existence and state before it changes anything. Guess:
// from PVE's qemu-server handlers and workers (lock and state checks come
// first); not verified for every endpoint.
var refusalKinds = map[failureKind]bool{
	kindLocked: true, kindExists: true, kindNoSuchVM: true,
	kindNotRunning: true, kindAlreadyRunning: true, kindRunning: true,
}

// refused reports whether failure e proves its request (or task) did not
// act: an HTTP 4xx, or a refusal kind (see refusalKinds).
func (e *pveError) refused() bool {
	return e.status/100 == 4 || refusalKinds[e.kind]
}

// taskFailure is a task that ended with exit status exit.
func taskFailure(upid, exit string) *pveError {
	return &pveError{message: exit, upid: upid, kind: classifyFailure(0, exit)}
}

// isKind reports whether err is a PVE failure of kind.
func isKind(err error, kind failureKind) bool {
	var pe *pveError
	return errors.As(err, &pe) && pe.kind == kind
}

// kindCodes are the ComputeError codes of the failure kinds that are not
// PROVIDER_ERROR. The others are PROVIDER_ERROR with details.status (the
// HTTP status; 200 for a failed task, whose status the API answered) and
// details.code (the kind; a failed task's exit status). 401 and 403 are
// PROVIDER_ERROR too: the token (or its privileges) is wrong, which an
// operator fixes without touching the instances; ACCESS_DENIED is kept for
// VMs this system does not manage.
var kindCodes = map[failureKind]api.Code{
	kindNoSuchVM:   api.CodeNotFound,
	kindNotRunning: api.CodeInvalidState,
}

// computeError maps a PVE failure to its ComputeError. An HTTP 400
// (parameter verification failed) or 422 refuses the request itself, which
// can never pass when sent again: details.permanent.
func (e *pveError) computeError() *api.ComputeError {
	if e.upid != "" {
		return api.ProviderError(http.StatusOK, e.message, "proxmox: %s", e.Error())
	}
	if code, ok := kindCodes[e.kind]; ok {
		return api.Errorf(code, "proxmox: %s", e.Error())
	}
	ce := api.ProviderError(e.status, string(e.kind), "proxmox: %s", e.Error())
	if e.status == http.StatusBadRequest || e.status == http.StatusUnprocessableEntity {
		ce.Details.Permanent = true
	}
	return ce
}

// markNotExecuted marks err details.notExecuted when no request of the
// call may have changed anything (rec.untouched).
func markNotExecuted(err error, rec *recorder) error {
	if err != nil && rec.untouched() {
		ce := api.AsComputeError(err)
		ce.Details.NotExecuted = true
		return ce
	}
	return err
}

// classify turns any error of a call into a ComputeError: those that are
// one pass through, PVE failures are mapped by computeError, a call that
// ended with its context is UNAVAILABLE, and anything else means the API
// was not reached (transport or TLS failure): PROVIDER_ERROR status 0,
// code unreachable.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ce *api.ComputeError
	if errors.As(err, &ce) {
		return ce
	}
	var pe *pveError
	var denied *egress.DeniedError
	switch {
	case errors.As(err, &pe):
		return pe.computeError()
	case errors.As(err, &denied):
		return api.Errorf(api.CodeAccessDenied, "proxmox: %v; the account's url must name a cluster the operator allows", denied).
			WithPath("config." + FieldURL)
	case ctx.Err() != nil:
		return api.Errorf(api.CodeUnavailable, "proxmox: call ended before the API answered: %v", ctx.Err())
	}
	return api.ProviderError(0, codeUnreachable, "proxmox: API unreachable: %v", err)
}

// unexpectedReply is the error of a reply that does not have PVE's shape.
func unexpectedReply(what string, err error) *api.ComputeError {
	return api.ProviderError(http.StatusOK, codeUnexpectedReply, "proxmox: unexpected reply to %s: %v", what, err)
}
