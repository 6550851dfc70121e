// Package sshemu emulates the SSH side of machines for the emulators and
// tests: every Machine is an SSH server (golang.org/x/crypto/ssh) on a
// loopback port with its own ed25519 host key, and a small deterministic
// command interpreter (interpreter.go) — never a shell on the host. A
// Machine records what ran, answers configured outputs and exit codes,
// can hang or drop the connection, can change its host key, can be down
// (SetDown: not answering yet, as while it boots), and serves
// cloud-init and journal logs. A Fleet holds the machines of one emulator,
// by the emulator's machine id.
//
// Emulator-only: real machines run their own sshd; nothing here is used
// against a real provider.
package sshemu

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"
)

// Log sources a Machine serves (SetLog, and the commands of
// interpreter.go that read them).
const (
	LogCloudInit = "cloud-init" // /var/log/cloud-init-output.log
	LogJournal   = "journal"    // journalctl
	LogConsole   = "console"    // journalctl -k (the kernel's console messages)
)

// Response is what a program registered with SetProgram does when run:
// write Stdout and Stderr and exit with Exit; or Hang (write Stdout, then
// block until the client closes the connection or the machine stops);
// or Drop the connection at once (no exit status reaches the client).
type Response struct {
	Stdout string
	Stderr string
	Exit   int
	Hang   bool
	Drop   bool
}

// Run is one command a client ran on the machine, as recorded: the SSH
// user, the command line of the session, the script read on standard
// input (for "sh -s"), the environment the script exported, the exit
// status (-1 when the session ended without one: a hang or a drop), the
// SHA256 fingerprint of the client's key, and when it started.
type Run struct {
	User      string
	Command   string
	Script    string
	Env       map[string]string
	Exit      int
	ClientKey string
	At        time.Time
}

// Machine is one emulated machine's SSH server. It is safe for concurrent
// use. Create one with Fleet.Start; it serves until Stop.
type Machine struct {
	name string
	ln   net.Listener
	log  zerolog.Logger

	mu       sync.Mutex
	signer   ssh.Signer
	programs map[string]Response
	logs     map[string][]string
	runs     []Run
	conns    map[net.Conn]bool
	down     bool
	stopped  chan struct{}
	wg       sync.WaitGroup
}

// newMachine listens on 127.0.0.1:0 with a fresh host key.
func newMachine(name string, log zerolog.Logger) (*Machine, error) {
	signer, err := newHostKey()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sshemu: listen: %w", err)
	}
	m := &Machine{name: name, ln: ln, log: log.With().Str("machine", name).Logger(), signer: signer,
		programs: map[string]Response{}, logs: defaultLogs(name), conns: map[net.Conn]bool{}, stopped: make(chan struct{})}
	m.wg.Add(1)
	go m.accept()
	return m, nil
}

// newHostKey is a fresh ed25519 host key.
func newHostKey() (ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sshemu: host key: %w", err)
	}
	return ssh.NewSignerFromKey(priv)
}

// defaultLogs is what a freshly booted machine logs.
func defaultLogs(name string) map[string][]string {
	return map[string][]string{
		LogCloudInit: {"Cloud-init v. 24.1 running 'init' ", "Cloud-init v. 24.1 running 'modules:final'",
			"Cloud-init v. 24.1 finished. Datasource DataSourceHetzner. Up 12.34 seconds"},
		LogJournal: {name + " systemd[1]: Started ssh.service - OpenBSD Secure Shell server.",
			name + " systemd[1]: Reached target multi-user.target - Multi-User System."},
		LogConsole: {"[    0.000000] Linux version 6.1.0-emulated", "[    1.234567] Run /sbin/init as init process"},
	}
}

// Endpoint is the machine's SSH address, "127.0.0.1:PORT".
func (m *Machine) Endpoint() string { return m.ln.Addr().String() }

// Port is the port of Endpoint.
func (m *Machine) Port() int { return m.ln.Addr().(*net.TCPAddr).Port }

// HostKey is the machine's current public host key.
func (m *Machine) HostKey() ssh.PublicKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.signer.PublicKey()
}

// ChangeHostKey gives the machine a fresh host key, as a reinstalled or
// impersonated machine would answer with. Connections made from now on
// see it.
func (m *Machine) ChangeHostKey() error {
	signer, err := newHostKey()
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.signer = signer
	m.mu.Unlock()
	return nil
}

// SetProgram registers the program name (a command line's first word):
// running it answers r. A registered name shadows a built-in command.
func (m *Machine) SetProgram(name string, r Response) {
	m.mu.Lock()
	m.programs[name] = r
	m.mu.Unlock()
}

// SetLog replaces the lines of log source (LogCloudInit, LogJournal,
// LogConsole).
func (m *Machine) SetLog(source string, lines []string) {
	m.mu.Lock()
	m.logs[source] = slices.Clone(lines)
	m.mu.Unlock()
}

// SetDown makes the machine's SSH server not answer while down is true,
// as a machine still booting (sshd not up yet): each connection is closed
// before the handshake, which a client sees as unreachable. Guess: a real
// machine refuses the TCP connection then; the emulated port stays open
// so that the endpoint keeps its port.
func (m *Machine) SetDown(down bool) {
	m.mu.Lock()
	m.down = down
	m.mu.Unlock()
}

// Runs returns the commands run so far, oldest first (a copy).
func (m *Machine) Runs() []Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.runs)
}

// Stop closes the listener and every connection, and waits for the
// sessions to end. Stop is idempotent.
func (m *Machine) Stop() {
	m.mu.Lock()
	select {
	case <-m.stopped:
		m.mu.Unlock()
		return
	default:
	}
	close(m.stopped)
	for c := range m.conns {
		_ = c.Close()
	}
	m.mu.Unlock()
	_ = m.ln.Close()
	m.wg.Wait()
}

func (m *Machine) accept() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			return
		}
		m.mu.Lock()
		select {
		case <-m.stopped:
			m.mu.Unlock()
			_ = c.Close()
			return
		default:
		}
		if m.down {
			m.mu.Unlock()
			_ = c.Close()
			continue
		}
		m.conns[c] = true
		m.mu.Unlock()
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.serve(c)
			m.mu.Lock()
			delete(m.conns, c)
			m.mu.Unlock()
			_ = c.Close()
		}()
	}
}

// serve runs the SSH handshake on c (any public key is accepted; the
// key's fingerprint is recorded with each run) and its sessions.
func (m *Machine) serve(c net.Conn) {
	m.mu.Lock()
	signer := m.signer
	m.mu.Unlock()
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		return &ssh.Permissions{Extensions: map[string]string{"key": ssh.FingerprintSHA256(key)}}, nil
	}}
	cfg.AddHostKey(signer)
	conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		m.log.Debug().Err(err).Msg("ssh handshake failed")
		return
	}
	defer func() { _ = conn.Close() }()
	go ssh.DiscardRequests(reqs)
	closed := make(chan struct{})
	go func() { _ = conn.Wait(); close(closed) }()
	var sessions sync.WaitGroup
	defer sessions.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			m.session(c, conn, closed, ch, creqs)
		}()
	}
}

// session answers one session channel's "exec" request (shells, ptys
// and subsystems are refused) by interpreting its command.
func (m *Machine) session(raw net.Conn, conn *ssh.ServerConn, closed <-chan struct{}, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer func() { _ = ch.Close() }()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		run := Run{User: conn.User(), Command: payload.Command, Exit: -1, ClientKey: conn.Permissions.Extensions["key"], At: time.Now()}
		res := m.interpret(&run, ch)
		m.record(run)
		switch {
		case res.drop:
			_ = raw.Close()
		case res.hang:
			m.hang(closed)
		default:
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(run.Exit)}))
		}
		return
	}
}

// hang blocks until the client closes the connection (closed) or the
// machine stops.
func (m *Machine) hang(closed <-chan struct{}) {
	select {
	case <-closed:
	case <-m.stopped:
	}
}

func (m *Machine) record(r Run) {
	m.mu.Lock()
	m.runs = append(m.runs, r)
	m.mu.Unlock()
}

// Fleet is the SSH machines of one emulator, by machine id. It is safe for
// concurrent use; the zero value is not: use NewFleet.
type Fleet struct {
	log      zerolog.Logger
	mu       sync.Mutex
	machines map[string]*Machine
	closed   bool
}

// NewFleet returns an empty fleet logging to log.
func NewFleet(log zerolog.Logger) *Fleet {
	return &Fleet{log: log.With().Str("component", "sshemu").Logger(), machines: map[string]*Machine{}}
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("sshemu: fleet closed")

// Start gives machine id an SSH endpoint (and returns the one it has when
// it has one). Errors: ErrClosed, or no loopback port could be opened.
func (f *Fleet) Start(id string) (*Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	if m := f.machines[id]; m != nil {
		return m, nil
	}
	m, err := newMachine(id, f.log)
	if err != nil {
		return nil, err
	}
	f.machines[id] = m
	return m, nil
}

// Machine returns machine id's SSH server, or nil.
func (f *Fleet) Machine(id string) *Machine {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.machines[id]
}

// Stop stops machine id's SSH server and forgets it (the machine was
// deleted); an unknown id is ignored.
func (f *Fleet) Stop(id string) {
	f.mu.Lock()
	m := f.machines[id]
	delete(f.machines, id)
	f.mu.Unlock()
	if m != nil {
		m.Stop()
	}
}

// Close stops every machine; Start fails afterwards.
func (f *Fleet) Close() {
	f.mu.Lock()
	f.closed = true
	ms := f.machines
	f.machines = map[string]*Machine{}
	f.mu.Unlock()
	for _, m := range ms {
		m.Stop()
	}
}
