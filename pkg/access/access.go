// Package access reaches inside machines over SSH: it runs one command on
// a machine with a pinned host key and bounded output. It is the one
// machine-access layer of the control plane: the reconciler's configure
// and drain steps, instances.exec and instances.logs use it, and so does
// the bootstrap of host pools (Hetzner Robot: rescue system, installimage).
//
// Host keys are verified, never trusted blindly: a Target carries the
// SHA256 fingerprint pinned for the machine; an empty pin accepts the key
// presented at this first contact and reports it (Result.HostKey) for the
// caller to record; any later key that differs is refused
// (ErrHostKeyChanged) before any command is sent.
package access

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

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

// Run connects to t, runs cmd (Conn.Run) and closes the connection.
// Errors: those of Connect and Conn.Run; Result.HostKey is set whenever
// the machine presented a key.
func Run(ctx context.Context, t Target, cmd Command) (Result, error) {
	c, err := Connect(ctx, t)
	if err != nil {
		return Result{HostKey: c.HostKey()}, err
	}
	defer c.Close()
	return c.Run(ctx, cmd)
}

// Conn is an SSH connection to a machine whose host key was verified.
type Conn struct {
	client  *ssh.Client
	address string
	hostKey string
}

// Connect dials t within ctx and verifies its host key against
// t.PinnedHostKey. The returned Conn is non-nil even on error, so that
// HostKey tells what a machine presented. Errors: ErrHostKeyChanged,
// ErrUnreachable, ErrDenied (each wrapped with the cause; none carries
// key material).
func Connect(ctx context.Context, t Target) (*Conn, error) {
	c := &Conn{address: t.Address}
	cfg := &ssh.ClientConfig{
		User: t.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(t.Key)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			c.hostKey = ssh.FingerprintSHA256(key)
			if t.PinnedHostKey != "" && c.hostKey != t.PinnedHostKey {
				return ErrHostKeyChanged
			}
			return nil
		},
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", t.Address)
	if err != nil {
		return c, fmt.Errorf("%w: %s: %w", ErrUnreachable, t.Address, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	defer stop()
	conn, chans, reqs, err := ssh.NewClientConn(raw, t.Address, cfg)
	if err != nil {
		_ = raw.Close()
		switch {
		case errors.Is(err, ErrHostKeyChanged):
			return c, fmt.Errorf("%w: %s presented %s, pinned %s", ErrHostKeyChanged, t.Address, c.hostKey, t.PinnedHostKey)
		case strings.Contains(err.Error(), "unable to authenticate"): // x/crypto/ssh says so only in its message
			return c, fmt.Errorf("%w: %s as %s", ErrDenied, t.Address, t.User)
		}
		return c, fmt.Errorf("%w: %s: %w", ErrUnreachable, t.Address, err)
	}
	c.client = ssh.NewClient(conn, chans, reqs)
	return c, nil
}

// HostKey is the SHA256 fingerprint of the host key the machine
// presented ("" when it presented none).
func (c *Conn) HostKey() string { return c.hostKey }

// Close closes the connection.
func (c *Conn) Close() {
	if c.client != nil {
		_ = c.client.Close()
	}
}

// Run runs cmd in a new session and waits for its exit status or the end
// of ctx (the connection is closed then: TimedOut, no error). Errors:
// ErrDropped (the connection ended without an exit status).
func (c *Conn) Run(ctx context.Context, cmd Command) (Result, error) {
	res := Result{HostKey: c.hostKey}
	sess, err := c.client.NewSession()
	if err != nil {
		return res, fmt.Errorf("%w: %s: %w", ErrDropped, c.address, err)
	}
	defer func() { _ = sess.Close() }()
	limit := cmd.Limit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	stdout, stderr := &tail{limit: limit}, &tail{limit: limit}
	sess.Stdout, sess.Stderr = stdout, stderr
	sess.Stdin = strings.NewReader(cmd.Stdin)
	if err := sess.Start(cmd.Line); err != nil {
		return res, fmt.Errorf("%w: %s: %w", ErrDropped, c.address, err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		c.Close()    // a hung command ends with its connection
		err = <-done // ctx.Err() decides below
	}
	res.Stdout, res.Stderr, res.Truncated = stdout.String(), stderr.String(), stdout.cut || stderr.cut
	var exit *ssh.ExitError
	switch {
	case ctx.Err() != nil:
		res.ExitCode, res.TimedOut = -1, true
		return res, nil
	case err == nil:
		return res, nil
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitStatus()
		return res, nil
	}
	return res, fmt.Errorf("%w: %s: %w", ErrDropped, c.address, err)
}

// StepCommand is the command of a configure or drain step on instance
// instanceID at generation: "sh -s -- <id> <generation>" reading a script
// that exports COMPUTE_INSTANCE_ID and COMPUTE_GENERATION, then runs the
// step's script, or its hook (api.HookDir/<hook> <id> <generation>).
// Output is bounded at limit bytes a stream.
func StepCommand(step *api.AccessStep, instanceID string, generation int64, limit int) Command {
	gen := strconv.FormatInt(generation, 10)
	body := step.Script
	if step.Hook != "" {
		body = api.HookDir + "/" + step.Hook + " $1 $2\n"
	}
	return Command{Line: "sh -s -- " + instanceID + " " + gen,
		Stdin: "export COMPUTE_INSTANCE_ID=$1 COMPUTE_GENERATION=$2\n" + body, Limit: limit}
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
// (ExternalMachine.SSHEndpoint, emulator-only today), else, when private
// (the machine's pool has a network), its first private address (RFC 1918
// or fc00::/7: a Hetzner Cloud private network's, a Proxmox VE pool's
// static or DHCP address on its bridge), else its first address
// (providers list public IPv4 first), on port (DefaultPort when 0). ""
// when m has no address.
func Address(m *api.ExternalMachine, port int, private bool) string {
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
	host := m.Addresses[0]
	if private {
		for _, a := range m.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil && ip.IsPrivate() {
				host = a
				break
			}
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
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
