package api

import (
	"regexp"
	"strconv"
	"time"
)

// Host pool classes: pools of machines the platform does not create but
// claims and bootstraps into hosts (docs/user-guide.md, "Dedicated
// servers"). Their instances come from accounts.bootstrap, never from
// instances.create; their agent is PoolAgentNone: the platform reaches a
// host over SSH only (pool access, required), for the bootstrap sequence,
// the pool's configure and drain steps, exec and logs; nothing of the
// platform runs on the host.
const (
	// PoolClassMetalHost: dedicated servers (provider kind metal) that
	// become hosts, e.g. Kubernetes nodes or hypervisors.
	PoolClassMetalHost = "metal-host"
	// PoolClassVPSHost: the same for machines of a provider of kind vps
	// that are bootstrapped the same way (a VPS with a rescue system).
	PoolClassVPSHost = "vps-host"
)

// HostPoolClass reports whether class is a host pool class.
func HostPoolClass(class string) bool {
	return class == PoolClassMetalHost || class == PoolClassVPSHost
}

// AccountBootstrapRequest claims server ServerNumber of account
// AccountID into pool PoolID (of a host class on that account) and
// bootstraps it (accounts.bootstrap): an instance of the pool whose
// machine is the server, installed with Image (an installimage image:
// a path in the rescue system, e.g.
// "/root/.oldroot/nfs/images/Ubuntu-2404-noble-amd64-base.tar.gz", or an
// http(s) URL, of letters, digits and ._~:/?#@+,=%- only: it is a word of
// a shell command line), named Hostname (the instance's name; default
// "bm-<serverNumber>"), on Drives (default: installimage's choice) with
// software RAID level RAIDLevel (nil: RAID 1; -1: no RAID). Flavor is the
// pool flavor the instance is counted under (default the pool's first).
// IdempotencyKey as for instances.create.
type AccountBootstrapRequest struct {
	TenantID       string   `json:"tenantId,omitempty"`
	AccountID      string   `json:"accountId"`
	PoolID         string   `json:"poolId"`
	ServerNumber   int      `json:"serverNumber"`
	Image          string   `json:"image"`
	Hostname       string   `json:"hostname,omitempty"`
	Drives         []string `json:"drives,omitempty"`
	RAIDLevel      *int     `json:"raidLevel,omitempty"`
	Flavor         string   `json:"flavor,omitempty"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty"`
}

var (
	drivePattern    = regexp.MustCompile(`^/dev/[a-z0-9/_-]{1,64}$`)
	hostnamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	// imagePattern: a path or URL without shell metacharacters (the image
	// is a word of the installimage command line the rescue's shell runs).
	imagePattern = regexp.MustCompile(`^(/|https?://)[A-Za-z0-9._~:/?#@+,=%-]{1,500}$`)
)

// RAID levels installimage takes (SWRAIDLEVEL); -1 is no RAID.
var raidLevels = []int{-1, 0, 1, 5, 6, 10}

// Check checks the request. Errors: INVALID_INPUT naming the field
// (accountId, poolId, serverNumber, image, hostname, drives[i],
// raidLevel, flavor, idempotencyKey).
func (r *AccountBootstrapRequest) Check() error {
	switch {
	case !ValidID(PrefixAccount, r.AccountID):
		return InvalidInput("accountId", "accountId must be an account id (%s…)", PrefixAccount)
	case !ValidID(PrefixPool, r.PoolID):
		return InvalidInput("poolId", "poolId must be a pool id (%s…)", PrefixPool)
	case r.ServerNumber <= 0:
		return InvalidInput("serverNumber", "serverNumber must be the server's number (a positive integer)")
	case CheckInstallImage("image", r.Image) != nil:
		return CheckInstallImage("image", r.Image)
	case r.Hostname != "" && !hostnamePattern.MatchString(r.Hostname):
		return InvalidInput("hostname", "hostname must be 1 to 63 lower-case letters, digits and inner hyphens")
	case len(r.Drives) > 8:
		return InvalidInput("drives", "at most 8 drives")
	case CheckIdempotencyKey(r.IdempotencyKey) != nil:
		return CheckIdempotencyKey(r.IdempotencyKey)
	}
	for i, d := range r.Drives {
		if !drivePattern.MatchString(d) {
			return InvalidInput("drives["+strconv.Itoa(i)+"]", "drives[%d] must be a device path such as /dev/nvme0n1", i)
		}
	}
	if r.RAIDLevel != nil {
		ok := false
		for _, l := range raidLevels {
			ok = ok || l == *r.RAIDLevel
		}
		if !ok {
			return InvalidInput("raidLevel", "raidLevel must be one of -1 (none), 0, 1, 5, 6, 10")
		}
	}
	return nil
}

// CheckInstallImage checks an installimage image (a host's bootstrap or
// reinstall): an absolute path in the rescue system or an http(s) URL,
// without blanks or shell metacharacters. Error: INVALID_INPUT at path.
func CheckInstallImage(path, image string) error {
	if !imagePattern.MatchString(image) {
		return InvalidInput(path, "%s must be an installimage image: an absolute path in the rescue system or an http(s) URL "+
			"(letters, digits and ._~:/?#@+,=%%- only)", path)
	}
	return nil
}

// DefaultHostname is the hostname of a server bootstrapped without one.
func DefaultHostname(serverNumber int) string { return "bm-" + strconv.Itoa(serverNumber) }

// BootstrapSpec is an instance's bootstrap (instances of host pools
// only): the server it claims and how it is installed (the image is the
// instance's, the hostname its name).
type BootstrapSpec struct {
	ServerNumber int      `json:"serverNumber"`
	Drives       []string `json:"drives,omitempty"`
	RAIDLevel    *int     `json:"raidLevel,omitempty"`
}

// PoolRelease is what the release of a host of the pool (instances.delete
// of a bootstrapped server) does after the pool's drain step and before
// the server is un-claimed. Wipe: boot the rescue system, then wipe the
// disks' partition tables and filesystem signatures over SSH (the wipe
// steps of BootstrapStep); the rental is never cancelled either way.
type PoolRelease struct {
	Wipe bool `json:"wipe,omitempty"`
}

// CheckPoolRelease checks a pool's release for its class: only host pool
// classes release servers. Error: INVALID_INPUT at release.wipe.
func CheckPoolRelease(class string, r *PoolRelease) error {
	if r != nil && r.Wipe && !HostPoolClass(class) {
		return InvalidInput("release.wipe", "release.wipe is for pools of class %s or %s: only their servers are released",
			PoolClassMetalHost, PoolClassVPSHost)
	}
	return nil
}

// BootstrapStep is a step of the bootstrap sequence, in order. Each is
// recorded (status.bootstrap.step, a CAS write) before it is taken, so a
// pass that finds a step recorded knows it may have been taken and
// checks before taking it again (see services/reconciler/bootstrap.go).
type BootstrapStep string

// Bootstrap steps, in order, one per line with what is done.
const (
	BootstrapRescue     BootstrapStep = "Rescue"     // arm the rescue system with the platform's key, hardware reset
	BootstrapWaitRescue BootstrapStep = "WaitRescue" // SSH answers in the rescue system (hostname "rescue"); its host key pinned
	BootstrapInstall    BootstrapStep = "Install"    // installimage with the generated config
	BootstrapReboot     BootstrapStep = "Reboot"     // hardware reset into the installed system
	BootstrapWaitSystem BootstrapStep = "WaitSystem" // SSH answers as the hostname; its host key pinned
	BootstrapReady      BootstrapStep = "Ready"      // installed; the pool's configure step follows
)

// The wipe steps of a release (PoolRelease.Wipe), in order, after the
// drain step; status.bootstrap records them as the bootstrap steps.
const (
	BootstrapWipeRescue     BootstrapStep = "WipeRescue"     // arm the rescue system, hardware reset
	BootstrapWipeWaitRescue BootstrapStep = "WipeWaitRescue" // SSH answers in the rescue system; its host key pinned
	BootstrapWipe           BootstrapStep = "Wipe"           // the wipe command over SSH in the rescue system
	BootstrapWiped          BootstrapStep = "Wiped"          // wiped; the server is un-claimed next
)

// BootstrapStatus is where an instance's bootstrap is: the step, whether
// it is Running (recorded, maybe taken, outcome not recorded), Waiting
// (for the machine) or Failed (Final: the sequence gave up; the instance
// is Failed), since when, how many rescue boots and installs it took, the
// rescue system's host key pinned at its first contact in this boot, a
// message, the last output of installimage, and when a wait last read
// the server from the provider.
type BootstrapStatus struct {
	Step          BootstrapStep `json:"step"`
	State         StepState     `json:"state"`
	Final         bool          `json:"final,omitempty"`
	Since         time.Time     `json:"since"`
	Rescues       int           `json:"rescues"`
	Installs      int           `json:"installs"`
	RescueHostKey string        `json:"rescueHostKey,omitempty"`
	Message       string        `json:"message,omitempty"`
	OutputTail    string        `json:"outputTail,omitempty"`
	// ReadAt is when a waiting step last read the server from the
	// provider (nil: not since the step began, whose own call read it).
	ReadAt *time.Time `json:"readAt,omitempty"`
}

// StepWaiting is a bootstrap step waiting for the machine (SSH not
// answering yet, or answering as another system).
const StepWaiting StepState = "Waiting"
