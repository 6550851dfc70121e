package api

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"time"

	"golang.org/x/crypto/ssh"
)

// PoolAccess is how the platform reaches a pool's machines over SSH (see
// pkg/access): the user, the platform's private key as a secret reference
// (resolved through the secrets service each time it is used, never
// stored or logged in plain form, and never put into user data), its
// public key (an OpenSSH authorized_keys line, not a secret: added to the
// SSH keys of every machine the pool creates, beside the tenant's; empty
// when the image already accepts the key), the port (default 22), the
// host-key policy, and the configure and drain steps.
type PoolAccess struct {
	User          string        `json:"user"`
	PrivateKey    string        `json:"privateKey"`
	PublicKey     string        `json:"publicKey,omitempty"`
	Port          int           `json:"port,omitempty"`
	HostKeyPolicy HostKeyPolicy `json:"hostKeyPolicy,omitempty"`
	Configure     *AccessStep   `json:"configure,omitempty"`
	Drain         *AccessStep   `json:"drain,omitempty"`
}

// HostKeyPolicy says how a machine's SSH host key is verified.
type HostKeyPolicy string

// Host-key policies.
const (
	// HostKeyPinFirstContact (the default and only policy): the key the
	// machine presents at the platform's first connection is recorded
	// (status.access.hostKey); any other key later is refused with a
	// HostKeyChanged condition and the machine is never configured. A
	// machine re-made (a new machine id, or a reinstall) is pinned anew.
	HostKeyPinFirstContact HostKeyPolicy = "pin-on-first-contact"
)

// AccessStep is a configure or drain step: a Script (run with sh -s, its
// arguments the instance id and generation, also exported as
// COMPUTE_INSTANCE_ID and COMPUTE_GENERATION) or a named Hook (the
// image's executable /usr/lib/compute/hooks/<hook>, run with the same
// arguments), a timeout in milliseconds (default 10 min for configure,
// 5 min for drain) and what a failure (a non-zero exit or the timeout)
// does: OnFailure "fail" (configure: the instance is Failed for this
// generation; drain: the delete waits and the drain is retried with
// backoff) or "retry" (configure only: retried with backoff) or
// "continue" (drain only, its default: the delete proceeds).
type AccessStep struct {
	Script    string        `json:"script,omitempty"`
	Hook      string        `json:"hook,omitempty"`
	TimeoutMs int64         `json:"timeoutMs,omitempty"`
	OnFailure StepOnFailure `json:"onFailure,omitempty"`
}

// StepOnFailure is what a failed configure or drain step does.
type StepOnFailure string

// Failure policies of a step.
const (
	OnFailureFail     StepOnFailure = "fail"     // configure, drain: stop (see AccessStep)
	OnFailureRetry    StepOnFailure = "retry"    // configure: retry with backoff
	OnFailureContinue StepOnFailure = "continue" // drain: the delete proceeds
)

// Step defaults and limits.
const (
	DefaultConfigureTimeout = 10 * time.Minute
	DefaultDrainTimeout     = 5 * time.Minute
	MaxStepTimeout          = time.Hour
	MaxStepScriptBytes      = 32 << 10
	// StepOutputTailBytes bounds the output tail a step's status keeps.
	StepOutputTailBytes = 2 << 10
)

// HookDir is where a named hook lives on the machine.
const HookDir = "/usr/lib/compute/hooks"

// Timeout is the step's timeout, or def when it names none.
func (s *AccessStep) Timeout(def time.Duration) time.Duration {
	if s.TimeoutMs <= 0 {
		return def
	}
	return time.Duration(s.TimeoutMs) * time.Millisecond
}

var (
	sshUserPattern = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	hookPattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
)

// CheckPoolAccess checks a pool's access. Errors: INVALID_INPUT naming
// the field (access.user, access.privateKey, access.publicKey, access.port,
// access.hostKeyPolicy, access.configure…, access.drain…).
func CheckPoolAccess(a *PoolAccess) error {
	if a == nil {
		return nil
	}
	if !sshUserPattern.MatchString(a.User) {
		return InvalidInput("access.user", "access.user must be a user name (lower-case letters, digits, _ and -, at most 32)")
	}
	if _, err := ParseSecretRef(a.PrivateKey); err != nil {
		return InvalidInput("access.privateKey", "access.privateKey must be a secret reference: %s", AsComputeError(err).Message)
	}
	if a.PublicKey != "" {
		if _, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(a.PublicKey)); err != nil || len(rest) != 0 {
			return InvalidInput("access.publicKey", "access.publicKey must be one OpenSSH public key (authorized_keys line)")
		}
	}
	if a.Port < 0 || a.Port > 65535 {
		return InvalidInput("access.port", "access.port must be a TCP port (1 to 65535; 0 or absent for 22)")
	}
	if a.HostKeyPolicy != "" && a.HostKeyPolicy != HostKeyPinFirstContact {
		return InvalidInput("access.hostKeyPolicy", "access.hostKeyPolicy must be %q", HostKeyPinFirstContact)
	}
	if err := checkStep("access.configure", a.Configure, []StepOnFailure{OnFailureFail, OnFailureRetry}); err != nil {
		return err
	}
	return checkStep("access.drain", a.Drain, []StepOnFailure{OnFailureContinue, OnFailureFail})
}

func checkStep(path string, s *AccessStep, policies []StepOnFailure) error {
	if s == nil {
		return nil
	}
	switch {
	case (s.Script == "") == (s.Hook == ""):
		return InvalidInput(path, "%s needs exactly one of script and hook", path)
	case len(s.Script) > MaxStepScriptBytes:
		return InvalidInput(path+".script", "%s.script is longer than %d bytes", path, MaxStepScriptBytes)
	case s.Hook != "" && !hookPattern.MatchString(s.Hook):
		return InvalidInput(path+".hook", "%s.hook must be a hook name (lower-case letters, digits, ., _ and -)", path)
	case s.TimeoutMs < 0 || s.TimeoutMs > MaxStepTimeout.Milliseconds():
		return InvalidInput(path+".timeoutMs", "%s.timeoutMs must be 1 to %d (absent: the default)", path, MaxStepTimeout.Milliseconds())
	case s.OnFailure != "" && !slices.Contains(policies, s.OnFailure):
		return InvalidInput(path+".onFailure", "%s.onFailure must be one of %v", path, policies)
	}
	return nil
}

// AccessStatus is what the platform learnt and did over SSH on an
// instance's machine: the host key pinned (HostKey, a SHA256 fingerprint,
// for machine HostKeyMachine, pinned at HostKeyPinnedAt), and the last
// configure and drain.
type AccessStatus struct {
	HostKey         string      `json:"hostKey,omitempty"`
	HostKeyMachine  string      `json:"hostKeyMachine,omitempty"`
	HostKeyPinnedAt *time.Time  `json:"hostKeyPinnedAt,omitempty"`
	Configure       *StepStatus `json:"configure,omitempty"`
	Drain           *StepStatus `json:"drain,omitempty"`
}

// StepState is the state of a configure or drain step.
type StepState string

// Step states.
const (
	// StepRunning: the step was started and its outcome is not recorded
	// yet; a pass that finds it so (the last one was interrupted) runs it
	// again (configure is at-least-once).
	StepRunning   StepState = "Running"
	StepSucceeded StepState = "Succeeded" // exit 0
	StepFailed    StepState = "Failed"    // non-zero exit, dropped or refused
	StepTimedOut  StepState = "TimedOut"  // ran past its timeout
)

// StepStatus is the recorded outcome of a configure or drain step for
// one generation and (configure) the machine it ran on (Machine, the
// provider's machine id: a machine re-made after it was deleted out of
// band is configured again): state, attempts, exit code (when one came), a message,
// the last StepOutputTailBytes of its output (stdout then stderr), when
// it started and finished, and whether the outcome is final for the
// generation (a configure that failed with onFailure "fail", or refused
// for a changed host key: the instance is Failed until its spec changes).
type StepStatus struct {
	Generation int64      `json:"generation"`
	Machine    string     `json:"machine,omitempty"`
	State      StepState  `json:"state"`
	Final      bool       `json:"final,omitempty"`
	Attempts   int        `json:"attempts"`
	ExitCode   *int       `json:"exitCode,omitempty"`
	Message    string     `json:"message,omitempty"`
	OutputTail string     `json:"outputTail,omitempty"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// Access condition types: Configured (True once configure succeeded for
// this generation; False with the reason while it waits, runs or
// failed) and HostKeyChanged (True while the machine presents a host key
// other than the pinned one), and Drained (the last drain's outcome).
const (
	ConditionConfigured     ConditionType = "Configured"
	ConditionHostKeyChanged ConditionType = "HostKeyChanged"
	ConditionDrained        ConditionType = "Drained"
)

// Access condition reasons.
const (
	ReasonWaitingForSSH   ConditionReason = "WaitingForSSH"   // Configured: SSH does not answer yet
	ReasonConfiguring     ConditionReason = "Configuring"     // Configured, Ready: the step runs
	ReasonConfigureFailed ConditionReason = "ConfigureFailed" // Configured: it failed
	ReasonHostKeyChanged  ConditionReason = "HostKeyChanged"  // Configured, HostKeyChanged
	ReasonStepSucceeded   ConditionReason = "Succeeded"       // Configured, Drained
	ReasonDrainFailed     ConditionReason = "DrainFailed"     // Drained
	ReasonDrainTimedOut   ConditionReason = "DrainTimedOut"   // Drained
)

// Event types of machine access (audit events).
const (
	EventExec       EventType = "exec"       // instances.exec ran a command
	EventLogs       EventType = "logs"       // instances.logs read a log
	EventConfigured EventType = "configured" // a configure step ended
	EventDrained    EventType = "drained"    // a drain step ended
)

// Log sources of instances.logs.
const (
	LogSourceCloudInit = "cloud-init"
	LogSourceJournal   = "journal"
	LogSourceConsole   = "console"
)

// LogSources lists every log source, in schema order.
func LogSources() []string { return []string{LogSourceCloudInit, LogSourceJournal, LogSourceConsole} }

// Exec and logs limits.
const (
	DefaultExecTimeout = 30 * time.Second
	MaxExecTimeout     = 5 * time.Minute
	MaxExecCommand     = 8 << 10
	// ExecOutputBytes bounds each of an exec's stdout and stderr.
	ExecOutputBytes = 64 << 10
	DefaultLogLines = 100
	MaxLogLines     = 5000
)

// InstanceExecRequest runs a command on an instance's machine
// (instances.exec): timeoutMs defaults to 30 s, at most 5 min.
type InstanceExecRequest struct {
	TenantID  string `json:"tenantId,omitempty"`
	ID        string `json:"id"`
	Command   string `json:"command"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
}

// Check checks the request. Errors: INVALID_INPUT naming id, command or
// timeoutMs.
func (r *InstanceExecRequest) Check() error {
	switch {
	case !ValidID(PrefixInstance, r.ID):
		return notAnInstanceID()
	case r.Command == "" || len(r.Command) > MaxExecCommand:
		return InvalidInput("command", "command is required (at most %d bytes)", MaxExecCommand)
	case r.TimeoutMs < 0 || r.TimeoutMs > MaxExecTimeout.Milliseconds():
		return InvalidInput("timeoutMs", "timeoutMs must be 1 to %d (absent: %d)",
			MaxExecTimeout.Milliseconds(), DefaultExecTimeout.Milliseconds())
	}
	return nil
}

// InstanceExecReply is an exec's outcome: the exit code (-1 when it timed
// out), the last ExecOutputBytes of stdout and of stderr, and whether
// either was cut (truncated) or the timeout ended the command (timedOut).
type InstanceExecReply struct {
	ExitCode  int    `json:"exitCode"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
	TimedOut  bool   `json:"timedOut"`
}

// InstanceLogsRequest reads the last lines of a log of an instance's
// machine (instances.logs): source cloud-init, journal or console; lines
// defaults to 100, at most 5000.
type InstanceLogsRequest struct {
	TenantID string `json:"tenantId,omitempty"`
	ID       string `json:"id"`
	Source   string `json:"source"`
	Lines    int    `json:"lines,omitempty"`
}

// notAnInstanceID is the INVALID_INPUT of a machine-access request whose
// id is not an instance id (a new error each time: callers may amend it).
func notAnInstanceID() *ComputeError {
	return InvalidInput("id", "id must be an instance id (inst_…)")
}

// Check checks the request. Errors: INVALID_INPUT naming id, source or
// lines.
func (r *InstanceLogsRequest) Check() error {
	switch {
	case !ValidID(PrefixInstance, r.ID):
		return notAnInstanceID()
	case !slices.Contains(LogSources(), r.Source):
		return InvalidInput("source", "source must be one of %v", LogSources())
	case r.Lines < 0 || r.Lines > MaxLogLines:
		return InvalidInput("lines", "lines must be 1 to %d (absent: %d)", MaxLogLines, DefaultLogLines)
	}
	return nil
}

// LogCommand is the command line that reads the last lines of source on
// the machine.
func LogCommand(source string, lines int) string {
	switch source {
	case LogSourceCloudInit:
		return fmt.Sprintf("tail -n %d /var/log/cloud-init-output.log", lines)
	case LogSourceConsole:
		return fmt.Sprintf("journalctl --no-pager -k -n %d", lines)
	}
	return fmt.Sprintf("journalctl --no-pager -n %d", lines)
}

// InstanceLogsReply is a log's last lines and whether the output was cut
// at ExecOutputBytes (truncated).
type InstanceLogsReply struct {
	Source    string   `json:"source"`
	Lines     []string `json:"lines"`
	Truncated bool     `json:"truncated"`
}

// EmulatorSSHPortKey is the emulator-only key (a Hetzner Cloud server
// label, a Proxmox VM config key) by which the emulators report the
// loopback port of a machine's SSH endpoint (pkg/sshemu); providers read
// it into ExternalMachine.SSHEndpoint (EmulatorSSHEndpoint). Real APIs
// never carry it.
const EmulatorSSHPortKey = "emulator-ssh-port"

// EmulatorSSHEndpoint is the SSH endpoint an EmulatorSSHPortKey value
// names, "127.0.0.1:<port>", or "" when port is not a port number.
func EmulatorSSHEndpoint(port string) string {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", port)
}
