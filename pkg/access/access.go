// Package access reaches inside machines over SSH: it runs one command on
// a machine with a pinned host key and bounded output. It is the one
// machine-access layer of the control plane: the reconciler's configure
// and drain steps, instances.exec and instances.logs use it, and so will
// a bootstrapping provider (Hetzner Robot: rescue system, installimage).
//
// Host keys are verified, never trusted blindly: a Target carries the
// SHA256 fingerprint pinned for the machine; an empty pin accepts the key
// presented at this first contact and reports it (Result.HostKey) for the
// caller to record; any later key that differs is refused
// (ErrHostKeyChanged) before any command is sent.
package access

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
)

// DefaultPort is the SSH port dialled when a pool names none.
const DefaultPort = 22

// DefaultOutputLimit bounds each of stdout and stderr (bytes) when a
// Command names no limit.
const DefaultOutputLimit = 64 << 10

// Errors of Run, matched with errors.Is.
var (
	// ErrHostKeyChanged: the machine presented a host key other than the
	// pinned one; nothing was run.
	ErrHostKeyChanged = errors.New("host key changed")
	// ErrUnreachable: no SSH connection could be made (refused, timed
	// out, handshake failed): the machine may still be booting.
	ErrUnreachable = errors.New("ssh unreachable")
	// ErrDenied: the machine refused the key.
	ErrDenied = errors.New("ssh authentication refused")
	// ErrDropped: the connection ended before the command's exit status.
	ErrDropped = errors.New("ssh connection dropped")
)

// Target is a machine to run a command on: its SSH address
// ("host:port"), the user, the client key and the pinned host key
// fingerprint ("SHA256:…"; "" pins on this first contact).
type Target struct {
	Address       string
	User          string
	Key           ssh.Signer
	PinnedHostKey string
}

// Command is what to run: a command line, an optional standard input
// (closed after it is written) and a bound in bytes for each of stdout
// and stderr (0: DefaultOutputLimit).
type Command struct {
	Line  string
	Stdin string
	Limit int
}

// Result is a command's outcome: its exit code (-1 when it timed out),
// the last Limit bytes of stdout and stderr, whether either was cut
// (Truncated), whether ctx ended it (TimedOut), and the fingerprint of
// the host key the machine presented.
type Result struct {
	ExitCode  int
	Stdout    string
	Stderr    string
	Truncated bool
	TimedOut  bool
	HostKey   string
}

// Run connects to t, verifies its host key, runs cmd and waits for its
// exit status or the end of ctx (the session is closed then: TimedOut,
// no error). Errors: ErrHostKeyChanged (Result.HostKey says what was
// presented), ErrUnreachable, ErrDenied, ErrDropped (each wrapped with
// the cause; none carries key material).
func Run(ctx context.Context, t Target, cmd Command) (Result, error) {
	var res Result
	cfg := &ssh.ClientConfig{
		User: t.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(t.Key)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			res.HostKey = ssh.FingerprintSHA256(key)
			if t.PinnedHostKey != "" && res.HostKey != t.PinnedHostKey {
				return ErrHostKeyChanged
			}
			return nil
		},
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", t.Address)
	if err != nil {
		return res, fmt.Errorf("%w: %s: %v", ErrUnreachable, t.Address, err)
	}
	stopWatch := context.AfterFunc(ctx, func() { _ = raw.Close() })
	defer stopWatch()
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl) // bounds the handshake; cleared below
	}
	conn, chans, reqs, err := ssh.NewClientConn(raw, t.Address, cfg)
	switch {
	case errors.Is(err, ErrHostKeyChanged):
		_ = raw.Close()
		return res, fmt.Errorf("%w: %s presented %s, pinned %s", ErrHostKeyChanged, t.Address, res.HostKey, t.PinnedHostKey)
	case err != nil && isAuthError(err):
		_ = raw.Close()
		return res, fmt.Errorf("%w: %s as %s", ErrDenied, t.Address, t.User)
	case err != nil:
		_ = raw.Close()
		return res, fmt.Errorf("%w: %s: %v", ErrUnreachable, t.Address, err)
	}
	_ = raw.SetDeadline(time.Time{})
	client := ssh.NewClient(conn, chans, reqs)
	defer func() { _ = client.Close() }()
	sess, err := client.NewSession()
	if err != nil {
		return res, fmt.Errorf("%w: %s: %v", ErrDropped, t.Address, err)
	}
	defer func() { _ = sess.Close() }()
	limit := cmd.Limit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	stdout, stderr := &tail{limit: limit}, &tail{limit: limit}
	sess.Stdout, sess.Stderr = stdout, stderr
	sess.Stdin = bytes.NewReader([]byte(cmd.Stdin))
	done := make(chan error, 1)
	if err := sess.Start(cmd.Line); err != nil {
		return res, fmt.Errorf("%w: %s: %v", ErrDropped, t.Address, err)
	}
	go func() { done <- sess.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = sess.Close()
		_ = client.Close()
		<-done
		res.ExitCode, res.TimedOut = -1, true
		res.Stdout, res.Stderr, res.Truncated = stdout.String(), stderr.String(), stdout.cut || stderr.cut
		return res, nil
	}
	res.Stdout, res.Stderr, res.Truncated = stdout.String(), stderr.String(), stdout.cut || stderr.cut
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitStatus()
		return res, nil
	case ctx.Err() != nil:
		res.ExitCode, res.TimedOut = -1, true
		return res, nil
	}
	return res, fmt.Errorf("%w: %s: %v", ErrDropped, t.Address, err)
}

// isAuthError reports whether a handshake failed because the key was
// refused (x/crypto/ssh says so only in its message).
func isAuthError(err error) bool {
	return strings.Contains(err.Error(), "unable to authenticate")
}

// ParseKey parses a PEM or OpenSSH private key (unencrypted). Errors:
// INVALID_CONFIG naming path; the message never quotes the key.
func ParseKey(pem, path string) (ssh.Signer, error) {
	s, err := ssh.ParsePrivateKey([]byte(pem))
	if err != nil {
		return nil, api.Errorf(api.CodeInvalidConfig, "the private key is not an unencrypted PEM or OpenSSH private key").WithPath(path)
	}
	return s, nil
}

// Address is where to reach m over SSH: the endpoint its provider reports
// (ExternalMachine.SSHEndpoint, emulator-only today), else its first
// address (providers list IPv4 first) on port (DefaultPort when 0). ""
// when m has no address.
func Address(m *api.ExternalMachine, port int) string {
	if m == nil {
		return ""
	}
	if m.SSHEndpoint != "" {
		return m.SSHEndpoint
	}
	if len(m.Addresses) == 0 {
		return ""
	}
	if port == 0 {
		port = DefaultPort
	}
	return net.JoinHostPort(m.Addresses[0], strconv.Itoa(port))
}

// tail keeps the last limit bytes written to it; cut says whether
// anything was dropped.
type tail struct {
	limit int
	buf   []byte
	cut   bool
}

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return n, nil
}

// String is the kept bytes, a rune cut at the front dropped.
func (t *tail) String() string { return strings.ToValidUTF8(string(t.buf), "") }
