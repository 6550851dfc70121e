package emulator

import (
	"fmt"
	"net/http"
	"strings"
)

// ErrorStyle selects how a non-2xx reply carries its message.
type ErrorStyle string

const (
	// StyleDefault follows the emulator's LegacyErrors setting.
	StyleDefault ErrorStyle = ""
	// StyleModern is PVE 8.3+: reason phrase and a "message" body field.
	StyleModern ErrorStyle = "modern"
	// StyleLegacy is PVE before 8.3: reason phrase only, body {"data":null}.
	StyleLegacy ErrorStyle = "legacy"
)

// apiError is a non-2xx API reply.
type apiError struct {
	status  int
	message string            // without trailing newline; also the reason phrase
	errors  map[string]string // per-parameter errors (400)
	style   ErrorStyle
	// bare suppresses "message" in every style (PVE's 401 replies).
	bare bool
}

// Error returns the message.
func (e *apiError) Error() string { return e.message }

// errInternal is PVE's 500 with a die() message.
func errInternal(format string, args ...any) *apiError {
	return &apiError{status: http.StatusInternalServerError, message: fmt.Sprintf(format, args...)}
}

// errParam is PVE's 400 "Parameter verification failed." for one parameter.
func errParam(param, msg string) *apiError {
	return errParams(map[string]string{param: msg})
}

// errParams is PVE's 400 for several parameters.
func errParams(errs map[string]string) *apiError {
	return &apiError{status: http.StatusBadRequest, message: "Parameter verification failed.", errors: errs}
}

// errMissingConfig is PVE's reply for a VMID that has no config on node.
func errMissingConfig(node string, vmid int) *apiError {
	return errInternal("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", node, vmid)
}

// msgLockTimeout is PVE's message when a VM's config flock stays busy.
func msgLockTimeout(vmid int) string {
	return fmt.Sprintf("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", vmid)
}

// msgLocked is PVE's check_lock message.
func msgLocked(lock string) string { return fmt.Sprintf("VM is locked (%s)", lock) }

// reasonPhrase turns a message into a single-line HTTP reason phrase.
func reasonPhrase(msg string) string {
	msg = strings.TrimRight(msg, "\r\n ")
	msg = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	if msg == "" {
		return "Internal Server Error"
	}
	return msg
}
