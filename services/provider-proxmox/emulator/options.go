package emulator

import (
	"maps"
	"strconv"
	"time"

	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/sshemu"
)

const (
	// DefaultTokenID is the API token accepted when Options.Tokens is empty.
	DefaultTokenID = "root@pam!emulator"
	// DefaultTokenSecret is the secret of DefaultTokenID.
	DefaultTokenSecret = "00000000-0000-4000-8000-00000000e301"

	// DefaultNodeCPUs is a node's CPU count when Node.CPUs is 0.
	DefaultNodeCPUs = 32
	// DefaultNodeMemoryBytes is a node's memory when Node.MemoryBytes is 0.
	DefaultNodeMemoryBytes int64 = 128 << 30
	// DefaultNodeName is the only node when Options.Nodes is empty.
	DefaultNodeName = "pve1"
	// DefaultBridge is every node's bridge when Node.Bridges is empty.
	DefaultBridge = "vmbr0"
)

// Node describes one cluster node.
type Node struct {
	// Name is the node name, e.g. "pve1".
	Name string `json:"name"`
	// CPUs is the number of logical CPUs (default DefaultNodeCPUs).
	CPUs int `json:"cpus"`
	// MemoryBytes is the node's total memory (default DefaultNodeMemoryBytes).
	MemoryBytes int64 `json:"memory_bytes"`
	// Offline makes the node unreachable: its /nodes/{node}/… routes answer
	// 595 and its guests show status "unknown" in /cluster/resources.
	Offline bool `json:"offline"`
	// Bridges are the node's Linux bridges (default [DefaultBridge]):
	// GET /nodes/{node}/network lists them, and a VM whose net0 names
	// another bridge fails to start there, as on PVE.
	Bridges []string `json:"bridges"`
}

// Template is a VM template to seed. Clones copy its config.
type Template struct {
	// VMID is the template's VMID (required, >= 100).
	VMID int `json:"vmid"`
	// Name is the template's name (default "tpl-{vmid}").
	Name string `json:"name"`
	// Node is the node holding it (default: the first node).
	Node string `json:"node"`
	// DiskGiB is the size of its scsi0 disk (default 10).
	DiskGiB int `json:"disk_gib"`
	// Cores is its CPU cores (default 2).
	Cores int `json:"cores"`
	// MemoryMiB is its memory (default 2048).
	MemoryMiB int `json:"memory_mib"`
	// Tags is its tag list in any PVE input form ("a,b", "a;b", "a b").
	Tags string `json:"tags"`
	// Description is its description.
	Description string `json:"description"`
	// Config holds further config keys (ipconfig0, cicustom, agent, …);
	// they override the generated ones.
	Config map[string]string `json:"config"`
	// Storage holds its disks (default local-lvm); a template on shared
	// storage can be cloned to any node that has the storage.
	Storage string `json:"storage"`
}

// Options configures an Emulator. The zero value is usable.
type Options struct {
	// Tokens maps API token IDs ("user@realm!name") to their secrets.
	// Empty means {DefaultTokenID: DefaultTokenSecret}.
	Tokens map[string]string
	// Nodes are the cluster's nodes. Empty means one online node
	// DefaultNodeName with DefaultNodeCPUs and DefaultNodeMemoryBytes.
	Nodes []Node
	// Templates are seeded at start and on Reset.
	Templates []Template
	// Storages are the cluster's storages besides local and local-lvm
	// (which every node has), e.g. a shared one for templates every node
	// can clone.
	Storages []Storage
	// TaskDurations maps task types (qmclone, qmconfig, resize, qmstart,
	// qmstop, qmshutdown, qmreset, qmreboot, qmdestroy) to how long their
	// tasks run on Clock. Missing types take 0: they complete at the next
	// API call.
	TaskDurations map[string]time.Duration
	// Clock measures task durations and uptimes (default: wall clock).
	// Injected latency is always real time.
	Clock clock.Clock
	// StatsInterval is how often pvestatd refreshes what /cluster/resources
	// reports of each guest besides its lock and tags (name, status,
	// template flag, sizes), on Clock; PVE's is DefaultStatsInterval. 0
	// (the default) serves them current. See SetStatsInterval.
	StatsInterval time.Duration
	// AgentStartDelay is how long, on Clock, a VM's QEMU guest agent takes
	// to answer after the VM starts: until then GET …/agent/
	// network-get-interfaces answers 500 "QEMU guest agent is not
	// running", as PVE does while the guest boots (Guess: real guests take
	// some seconds to tens of seconds, depending on the image). 0 (the
	// default) answers at once.
	AgentStartDelay time.Duration
	// LegacyErrors emulates PVE before 8.3: error messages only in the HTTP
	// reason phrase (body {"data":null}) and version 8.2.4. Otherwise the
	// emulator is PVE 8.3.0 and error bodies also carry "message".
	LegacyErrors bool
	// ListenAddr is where Start listens (default "127.0.0.1:0").
	ListenAddr string
	// CAFile and CAKeyFile keep Start's CA (certificate and private key,
	// PEM) across starts, as a real cluster keeps its pve-root-ca: when
	// both files exist Start signs its certificate with that CA, otherwise
	// it makes a new CA and writes both (the key with mode 0600). Empty
	// (the default): a new CA at every start, kept nowhere.
	CAFile, CAKeyFile string
	// SSH, when set, gives every VM made by a clone an SSH endpoint on
	// loopback from the clone's end until the VM is destroyed (fleet key:
	// the VMID), reported in its config under the emulator-only key
	// api.EmulatorSSHPortKey. Nil: no SSH endpoints.
	SSH *sshemu.Fleet
}

// withDefaults returns a copy of o with defaults filled in. Maps and slices
// are copied so later changes by the caller do not leak in.
func (o Options) withDefaults() Options {
	out := o
	if len(o.Tokens) == 0 {
		out.Tokens = map[string]string{DefaultTokenID: DefaultTokenSecret}
	} else {
		out.Tokens = maps.Clone(o.Tokens)
	}
	if len(o.Nodes) == 0 {
		out.Nodes = []Node{{Name: DefaultNodeName}}
	} else {
		out.Nodes = append([]Node(nil), o.Nodes...)
	}
	for i := range out.Nodes {
		if out.Nodes[i].CPUs <= 0 {
			out.Nodes[i].CPUs = DefaultNodeCPUs
		}
		if out.Nodes[i].MemoryBytes <= 0 {
			out.Nodes[i].MemoryBytes = DefaultNodeMemoryBytes
		}
		if len(out.Nodes[i].Bridges) == 0 {
			out.Nodes[i].Bridges = []string{DefaultBridge}
		} else {
			out.Nodes[i].Bridges = append([]string(nil), out.Nodes[i].Bridges...)
		}
	}
	out.Templates = append([]Template(nil), o.Templates...)
	out.Storages = append([]Storage(nil), o.Storages...)
	out.TaskDurations = maps.Clone(o.TaskDurations)
	if out.TaskDurations == nil {
		out.TaskDurations = map[string]time.Duration{}
	}
	if out.Clock == nil {
		out.Clock = clock.Real{}
	}
	if out.ListenAddr == "" {
		out.ListenAddr = "127.0.0.1:0"
	}
	return out
}

// withDefaults fills in a template's defaults; firstNode is used when Node
// is empty.
func (t Template) withDefaults(firstNode string) Template {
	if t.Name == "" {
		t.Name = "tpl-" + strconv.Itoa(t.VMID)
	}
	if t.Node == "" {
		t.Node = firstNode
	}
	if t.DiskGiB <= 0 {
		t.DiskGiB = 10
	}
	if t.Cores <= 0 {
		t.Cores = 2
	}
	if t.MemoryMiB <= 0 {
		t.MemoryMiB = 2048
	}
	if t.Storage == "" {
		t.Storage = "local-lvm"
	}
	return t
}
