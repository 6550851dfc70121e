package proxmox

import (
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Provider identity.
const (
	// ProviderID is the provider's id on the bus: compute.internal.provider.proxmox.<verb>.
	ProviderID = "proxmox"
	// Version is the provider's semantic version, answered by describe.
	Version = "0.1.0"
)

// Account config fields (the manifest).
const (
	// FieldURL is the cluster's API base URL, ending in /api2/json.
	FieldURL = "url"
	// FieldTokenID is the API token id, user@realm!name.
	FieldTokenID = "tokenId"
	// FieldTokenSecret holds a secret reference to the API token's secret.
	FieldTokenSecret = "tokenSecret"
	// FieldCACert is the PEM of the CA that signed the cluster's
	// certificate; when set, only that CA is trusted (pinning). The name
	// must not end in key, token, secret or password: such fields may only
	// hold secret references.
	FieldCACert = "caCert"
	// FieldNode pins clones to one node (and offers to its capacity).
	FieldNode = "node"
	// FieldVMIDMin is the lowest VMID this account uses.
	FieldVMIDMin = "vmidMin"
	// FieldVMIDMax is the highest VMID this account uses.
	FieldVMIDMax = "vmidMax"
	// FieldSizes lists the sizes offered: {name, vcpu, memoryGiB, diskGiB}.
	FieldSizes = "sizes"
	// FieldStorage is the storage full clones are written to.
	FieldStorage = "storage"
	// FieldBridge is the bridge the first NIC (net0) is attached to.
	FieldBridge = "bridge"
	// FieldTaskPollMs is how often task waits poll the task status, in
	// milliseconds (MinTaskPollMs to MaxTaskPollMs, at most the task
	// timeout); absent: the provider's WithTaskPollInterval, else each
	// task type's observed duration paces the polls (see taskPacer).
	FieldTaskPollMs = "taskPollMs"
	// FieldTaskTimeoutMs bounds one task wait, in milliseconds
	// (MinTaskTimeoutMs to MaxTaskTimeoutMs); absent: the provider's
	// WithTaskTimeout, else DefaultTaskTimeout.
	FieldTaskTimeoutMs = "taskTimeoutMs"
)

// Config defaults.
const (
	// DefaultVMIDMin is vmidMin when the config names none.
	DefaultVMIDMin = 10000
	// DefaultVMIDMax is vmidMax when the config names none.
	DefaultVMIDMax = 19999
	// DefaultStorage is storage when the config names none.
	DefaultStorage = "local-lvm"
	// DefaultBridge is bridge when the config names none.
	DefaultBridge = "vmbr0"
	// DefaultRegion is the region of offers and machines of an account
	// that pins no node: the cluster is one region. An account pinning a
	// node uses the node's name as its region.
	DefaultRegion = "proxmox"
)

// Bounds of the task timing fields, in milliseconds: polls from 100 ms
// (10 requests a second per wait, the most a pveproxy should see) to a
// minute, timeouts from a second to a day.
const (
	// MinTaskPollMs is the smallest taskPollMs.
	MinTaskPollMs = 100
	// MaxTaskPollMs is the largest taskPollMs.
	MaxTaskPollMs = 60_000
	// MinTaskTimeoutMs is the smallest taskTimeoutMs.
	MinTaskTimeoutMs = 1_000
	// MaxTaskTimeoutMs is the largest taskTimeoutMs.
	MaxTaskTimeoutMs = 86_400_000
)

// Bounds of the manifest's numbers.
const (
	minVMID      = 100
	maxVMID      = 999999999
	maxVcpu      = 512
	maxMemoryGiB = 4096
	maxDiskGiB   = 131072
)

// Manifest is the account config of proxmox: url, tokenId, tokenSecret
// (secret reference), sizes (required); caCert, node, vmidMin, vmidMax,
// storage, bridge (optional, with defaults); taskPollMs, taskTimeoutMs
// (optional; absent, the provider's options decide).
func Manifest() []api.ManifestField {
	i := func(v int64) *int64 { return &v }
	sizeFields := []api.ManifestField{
		{Name: "name", Type: provider.TypeString, Required: true, Description: "Offer id of the size"},
		{Name: "vcpu", Type: provider.TypeInt, Required: true, Min: i(1), Max: i(maxVcpu), Description: "CPU cores"},
		{Name: "memoryGiB", Type: provider.TypeInt, Required: true, Min: i(1), Max: i(maxMemoryGiB), Description: "Memory in GiB"},
		{Name: "diskGiB", Type: provider.TypeInt, Required: true, Min: i(1), Max: i(maxDiskGiB),
			Description: "Boot disk size in GiB (the template's disk is grown to it, never shrunk)"},
	}
	return []api.ManifestField{
		{Name: FieldURL, Type: provider.TypeString, Required: true,
			Description: "API base URL of the cluster, ending in /api2/json, e.g. https://pve1.example.net:8006/api2/json"},
		{Name: FieldTokenID, Type: provider.TypeString, Required: true,
			Description: "API token id, user@realm!name (privileges: VM.Allocate, VM.Clone, VM.Config.*, VM.PowerMgmt, " +
				"VM.Audit, VM.Monitor, Datastore.AllocateSpace, Sys.Audit)"},
		{Name: FieldTokenSecret, Type: provider.TypeSecret, Required: true,
			Description: "Reference to the API token's secret"},
		{Name: FieldCACert, Type: provider.TypeString,
			Description: "PEM of the CA that signed the cluster's certificate; when set only it is trusted (pin a self-signed cluster)"},
		{Name: FieldNode, Type: provider.TypeString,
			Description: "Node new VMs are cloned to, and whose capacity the offers report; default the template's node"},
		{Name: FieldVMIDMin, Type: provider.TypeInt, Default: int64(DefaultVMIDMin), Min: i(minVMID), Max: i(maxVMID),
			Description: "Lowest VMID this account uses"},
		{Name: FieldVMIDMax, Type: provider.TypeInt, Default: int64(DefaultVMIDMax), Min: i(minVMID), Max: i(maxVMID),
			Description: "Highest VMID this account uses"},
		{Name: FieldSizes, Type: provider.TypeList, Required: true,
			Item:        &api.ManifestField{Type: provider.TypeObject, Fields: sizeFields},
			Description: "The sizes offered"},
		{Name: FieldStorage, Type: provider.TypeString, Default: DefaultStorage,
			Description: "Storage the disks of full clones are written to"},
		{Name: FieldBridge, Type: provider.TypeString, Default: DefaultBridge,
			Description: "Bridge of the first network device (net0)"},
		{Name: FieldTaskPollMs, Type: provider.TypeInt, Min: i(MinTaskPollMs), Max: i(MaxTaskPollMs),
			Description: "How often a task wait polls the task status, in ms (at most taskTimeoutMs); " +
				"default: when a task of its type is expected to end"},
		{Name: FieldTaskTimeoutMs, Type: provider.TypeInt, Min: i(MinTaskTimeoutMs), Max: i(MaxTaskTimeoutMs),
			Description: "How long one task wait may last, in ms; default 600000 (10 min)"},
	}
}

// capabilities are the provider's: every call capability (labels: as
// tags, see LabelTag), ssh (its machines answer SSH at the address it
// reports; pkg/access), and the pool network and placement it honours:
// network.vlan (net0 bridge= and tag=), network.staticIPv4 (cloud-init
// ipconfig0 and nameserver from the machine's address) and
// placement.nodes (place).
var capabilities = []string{provider.CapabilityPower, provider.CapabilityReinstall, provider.CapabilityList,
	provider.CapabilityDeleteByKey, provider.CapabilitySSH, provider.CapabilityLabels, provider.CapabilityResize, provider.CapabilityMetrics,
	provider.CapabilityNetworkVLAN, provider.CapabilityStaticIPv4, provider.CapabilityPlacementNodes}

// Definition returns the proxmox provider definition: id ProviderID,
// version Version, provides vps, capabilities power, reinstall, list,
// delete.byKey, ssh, labels, network.vlan, network.staticIPv4 and
// placement.nodes, the Manifest, and a constructor configured by opts.
//
// The constructor makes no API call. It answers INVALID_CONFIG with
// details.path naming the field ("config.url", "config.caCert",
// "config.sizes[1].vcpu", "config.taskPollMs", "options.taskPollInterval", …) for an unusable
// config or option, and INVALID_INPUT for a plain value in tokenSecret.
func Definition(opts ...Option) *provider.Defined {
	s := newSettings(opts)
	return provider.MustDefine(provider.Definition{
		ID:           ProviderID,
		Version:      Version,
		Provides:     []string{api.KindVPS},
		Manifest:     Manifest(),
		Capabilities: capabilities,
		New: func(bc provider.BuildContext) (provider.Client, error) {
			return newClient(s, bc.Account)
		},
	})
}
