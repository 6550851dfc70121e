// Package emulator is an in-memory Hetzner Robot webservice
// (robot-ws.your-server.de) served over HTTP, for tests, `compute up` and
// the conformance program: dedicated servers, server names, resets, the
// rescue boot option, SSH keys, the order endpoints' products
// (products.go), per-endpoint hourly request limits, the block after
// repeated bad logins, and the API's error bodies
// ({"error":{"status","code","message"}}; ../../../../shared reference:
// hetzner-robot-api.md). Requests are form-encoded, replies JSON, auth is
// HTTP Basic with the webservice user.
//
// Every server has two SSH systems (pkg/sshemu machines): its rescue
// system (hostname "rescue", a fresh host key at every boot into it, a
// scripted installimage that succeeds, fails or hangs, see
// SetInstallImage) and its installed system (the hostname installimage
// was given, a fresh host key after every successful install). A reset
// boots the rescue system when one is armed (POST /boot/{n}/rescue), the
// disks otherwise; disks a failed or interrupted installimage left behind
// boot nothing that answers SSH. Which system answers is reported in the
// emulator-only reply header SSHPortHeader of GET /server/{n}: one
// loopback address per server, forwarding to the system running (real
// servers answer SSH on their own address, port 22).
//
// The installed system's "systemctl poweroff" shuts the server down (as
// the OS would: the webservice then reports it stopped).
//
// Where the real API's behaviour is undocumented, the choice is marked
// Guess: here and in the reference.
package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/sshemu"
)

// SSHPortHeader is the emulator-only reply header of GET /server/{n}
// naming the server's SSH address, a loopback port that stays the same
// whatever the server boots (as a real server's address, port 22): it
// forwards to the system running (the rescue or the installed one) and
// refuses every handshake while none answers (disks without an OS, a
// server off or still booting). Real replies never carry it.
const SSHPortHeader = "Emulator-Ssh-Port"

// InstallMode is what the scripted installimage of a server's rescue
// system does.
type InstallMode string

// Install modes, one per line with its meaning.
const (
	InstallSucceed InstallMode = "succeed" // exits 0; the next boot from disk runs the new system
	InstallFail    InstallMode = "fail"    // exits 1; the disks are left half-written
	InstallHang    InstallMode = "hang"    // never exits; the disks are left half-written
)

// Options configures an Emulator. The zero value is usable.
type Options struct {
	// User and Password are the webservice login; empty User accepts any
	// non-empty user and password.
	User, Password string
	// Limits overrides the hourly request limit of a route class (keys:
	// the Limit* constants of ratelimit.go); absent classes keep the
	// documented limits.
	Limits map[string]int
	// Clock measures the rate-limit windows and login blocks; nil: the
	// wall clock.
	Clock clock.Clock
	// Logger receives one debug line per API call.
	Logger zerolog.Logger
	// SSH, when set, gives every server its rescue and installed systems
	// (fleet keys "<number>-rescue" and "<number>") behind one SSH address
	// per server. Nil: no SSH.
	SSH *sshemu.Fleet
	// BootDelay is how long after a reset the system booted answers SSH
	// (on Clock; 0: at once). Guess: real servers take minutes (see the
	// reference, "Timing").
	BootDelay time.Duration
}

// ServerSpec seeds one dedicated server of the account (AddServer).
type ServerSpec struct {
	Number  int
	Name    string // "" for a server nobody named yet
	Product string // a Products key, e.g. "EX44"
	DC      string // e.g. "FSN1-DC14"
	// ResetTypes the server supports; nil: ["sw","hw","man"].
	ResetTypes []string
}

// Emulator is one Robot account's webservice. It is safe for concurrent
// use.
type Emulator struct {
	opts  Options
	clock clock.Clock
	log   zerolog.Logger
	ssh   *sshemu.Fleet

	mu      sync.Mutex
	servers map[int]*server
	keys    map[string]*key // by MD5 fingerprint
	limits  *limiter
	logins  map[string]*loginState // by client IP
	calls   []string
}

// server is one dedicated server and what it boots; guarded by mu.
type server struct {
	spec   ServerSpec
	ip     string
	ipv6   string
	rescue *rescueArm // armed for the next boot, or nil
	last   *rescueArm // the last arming (GET /boot/{n}/rescue/last)
	// booted is the system running: sysRescue, sysDisk or sysNone.
	booted string
	// disk is what the disks hold: diskOS (hostname set), diskBroken
	// (a failed or interrupted install) or diskOS with the seed OS.
	disk     string
	hostname string
	powered  bool
	install  InstallMode
	// rescueRuns counts the rescue machine's runs before the current
	// rescue boot, so a reboot reads only this boot's installimage runs.
	rescueRuns int
	// upAt is when the system booted last answers SSH (Options.BootDelay
	// after the reset); addr is the server's SSH address (nil: no SSH).
	upAt time.Time
	addr *sshAddress
	// osRuns and rescueSeen count the installed and the rescue system's
	// runs settle has looked at.
	osRuns, rescueSeen int
}

// Systems and disk states.
const (
	sysRescue  = "rescue"
	sysDisk    = "disk"
	sysNone    = "none"
	diskOS     = "os"
	diskBroken = "broken"
	diskWiped  = "wiped" // wipefs in the rescue system: no partition table, nothing boots
)

// rescueArm is one activation of the rescue system.
type rescueArm struct {
	os       string
	password string
	keys     []string // fingerprints
}

// key is one stored SSH public key.
type key struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
	Type        string `json:"type"`
	Size        int    `json:"size"`
	Data        string `json:"data"`
	CreatedAt   string `json:"created_at"`
}

// New returns an emulator with no servers (AddServer seeds them).
func New(opts Options) (*Emulator, error) {
	c := opts.Clock
	if c == nil {
		c = clock.Real{}
	}
	return &Emulator{opts: opts, clock: c, log: opts.Logger, ssh: opts.SSH, servers: map[int]*server{},
		keys: map[string]*key{}, limits: newLimiter(c, opts.Limits), logins: map[string]*loginState{}}, nil
}

// Close stops the servers' SSH addresses (the fleet is the caller's to
// close).
func (e *Emulator) Close() {
	e.mu.Lock()
	var addrs []*sshAddress
	for _, s := range e.servers {
		if s.addr != nil {
			addrs = append(addrs, s.addr)
		}
	}
	e.mu.Unlock()
	for _, a := range addrs {
		a.close()
	}
}

// AddServer seeds a server running a seed OS (hostname
// "Ubuntu-2404-noble-amd64-base", Guess: Hetzner's default install names
// the host after the image). Errors: a number already taken, no SSH port.
func (e *Emulator) AddServer(s ServerSpec) error {
	if s.ResetTypes == nil {
		s.ResetTypes = []string{"sw", "hw", "man"}
	}
	if s.DC == "" {
		s.DC = "FSN1-DC14"
	}
	if s.Product == "" {
		s.Product = "EX44"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.servers[s.Number]; ok || s.Number <= 0 {
		return fmt.Errorf("robot emulator: server number %d taken or not positive", s.Number)
	}
	srv := &server{spec: s, ip: fmt.Sprintf("198.51.100.%d", s.Number%250+1),
		ipv6: fmt.Sprintf("2a01:4f8:%x:%x::", s.Number/65536, s.Number%65536), booted: sysDisk, disk: diskOS,
		hostname: "Ubuntu-2404-noble-amd64-base", powered: true, install: InstallSucceed}
	if e.ssh != nil {
		os, err := e.ssh.Start(strconv.Itoa(s.Number))
		if err != nil {
			return err
		}
		os.SetProgram("hostname", sshemu.Response{Stdout: srv.hostname + "\n"})
		os.SetProgram("systemctl", sshemu.Response{}) // systemctl poweroff: see settle
		rescue, err := e.ssh.Start(rescueID(s.Number))
		if err != nil {
			return err
		}
		rescue.SetProgram("wipefs", sshemu.Response{}) // see settle
	}
	e.servers[s.Number] = srv
	return nil
}

func rescueID(n int) string { return strconv.Itoa(n) + "-rescue" }

// SetInstallImage sets what installimage does in server n's rescue
// system from the next boot into it (default InstallSucceed).
func (e *Emulator) SetInstallImage(n int, mode InstallMode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if srv := e.servers[n]; srv != nil {
		srv.install = mode
		e.armInstallImage(srv)
	}
}

// SetServerName renames server n out of band (another tool, another
// platform claiming it).
func (e *Emulator) SetServerName(n int, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if srv := e.servers[n]; srv != nil {
		srv.spec.Name = name
	}
}

// Calls is every API call so far, oldest first, as "METHOD /path" with
// the form fields that matter (type=, os=, server_name=) appended.
func (e *Emulator) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// Booted is the system server n runs: "rescue", "disk" or "none".
func (e *Emulator) Booted(n int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if srv := e.servers[n]; srv != nil {
		e.settle(srv)
		return srv.booted
	}
	return ""
}

// Installed reports the hostname of the system on server n's disks and
// whether the disks hold a complete one.
func (e *Emulator) Installed(n int) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if srv := e.servers[n]; srv != nil {
		e.settle(srv)
		return srv.hostname, srv.disk == diskOS
	}
	return "", false
}

// Wiped reports whether server n's disks were wiped (wipefs in its
// rescue system) and hold nothing since.
func (e *Emulator) Wiped(n int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if srv := e.servers[n]; srv != nil {
		e.settle(srv)
		return srv.disk == diskWiped
	}
	return false
}

// Machine is the SSH machine of server n's rescue system (rescue true) or
// installed system, or nil.
func (e *Emulator) Machine(n int, rescue bool) *sshemu.Machine {
	if e.ssh == nil {
		return nil
	}
	if rescue {
		return e.ssh.Machine(rescueID(n))
	}
	return e.ssh.Machine(strconv.Itoa(n))
}

// sortedServers is the servers by number; callers hold mu.
func (e *Emulator) sortedServers() []*server {
	out := make([]*server, 0, len(e.servers))
	for _, s := range e.servers {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Number < out[j].spec.Number })
	return out
}

// sshPort is srv's SSH address, started at the first read that reports
// it (a seeded fleet of thousands opens none; 0: no SSH, or it could not
// listen); callers hold mu.
func (e *Emulator) sshPort(srv *server) int {
	if e.ssh == nil {
		return 0
	}
	if srv.addr == nil {
		addr, err := listenSSH(func() int {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.systemPort(srv)
		})
		if err != nil {
			e.log.Warn().Err(err).Int("server", srv.spec.Number).Msg("robot emulator: SSH address")
			return 0
		}
		srv.addr = addr
	}
	return srv.addr.port()
}

// settle applies what ran since the last look: on the installed system,
// a "systemctl poweroff" that exited 0 shuts the server down (off, as
// after an ACPI shutdown; Guess: at once); in the rescue system, a
// "wipefs" that exited 0 wipes the disks (nothing boots from them).
// Callers hold mu.
func (e *Emulator) settle(srv *server) {
	if e.ssh == nil {
		return
	}
	if srv.booted == sysRescue {
		if m := e.ssh.Machine(rescueID(srv.spec.Number)); m != nil {
			runs := m.Runs()
			for _, r := range runs[min(srv.rescueSeen, len(runs)):] {
				if strings.HasPrefix(r.Command, "wipefs ") && r.Exit == 0 {
					srv.disk = diskWiped
				}
			}
			srv.rescueSeen = len(runs)
		}
		return
	}
	if srv.booted != sysDisk {
		return
	}
	m := e.ssh.Machine(strconv.Itoa(srv.spec.Number))
	if m == nil {
		return
	}
	runs := m.Runs()
	for _, r := range runs[min(srv.osRuns, len(runs)):] {
		if w := strings.Fields(r.Command); len(w) >= 2 && w[0] == "systemctl" && w[1] == "poweroff" && r.Exit == 0 {
			srv.powered, srv.booted = false, sysNone
		}
	}
	srv.osRuns = len(runs)
}

// systemPort is where srv's booted system answers now (0: none answers:
// off, still booting, or disks without an OS); callers hold mu.
func (e *Emulator) systemPort(srv *server) int {
	e.settle(srv)
	var m *sshemu.Machine
	switch {
	case !srv.powered || e.now().Before(srv.upAt):
	case srv.booted == sysRescue:
		m = e.ssh.Machine(rescueID(srv.spec.Number))
	case srv.booted == sysDisk && srv.disk == diskOS:
		m = e.ssh.Machine(strconv.Itoa(srv.spec.Number))
	}
	if m == nil {
		return 0
	}
	return m.Port()
}

// randomPassword is a rescue root password.
func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// now is the emulator's clock.
func (e *Emulator) now() time.Time { return e.clock.Now() }

// ServerInfo is a server as the account's Robot console shows it.
type ServerInfo struct {
	Number int
	Name   string
}

// Servers lists the account's servers by number.
func (e *Emulator) Servers() []ServerInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ServerInfo
	for _, s := range e.sortedServers() {
		out = append(out, ServerInfo{Number: s.spec.Number, Name: s.spec.Name})
	}
	return out
}

// RemoveServer ends server n's rental at once (cancelled and handed
// back, as in the Robot console); its SSH systems stop. An unknown
// number is ignored.
func (e *Emulator) RemoveServer(n int) {
	e.mu.Lock()
	srv, ok := e.servers[n]
	delete(e.servers, n)
	e.mu.Unlock()
	if ok && srv.addr != nil {
		srv.addr.close()
	}
	if ok && e.ssh != nil {
		e.ssh.Stop(strconv.Itoa(n))
		e.ssh.Stop(rescueID(n))
	}
}
