package api

import (
	"regexp"
	"time"
)

// Secret is the metadata of a stored credential. The value is never part of
// it: nothing on the public API returns a secret value.
type Secret struct {
	ID        string    `json:"id"`
	TenantID  string    `json:"tenantId"`
	Name      string    `json:"name"`
	Ref       string    `json:"ref"`
	CreatedAt time.Time `json:"createdAt"`
}

// Account is a provider account: a provider kind and a config validated
// against that provider's manifest. Credentials in Config are secret
// references only. Version starts at 1 and increments on every update.
type Account struct {
	ID        string         `json:"id"`
	TenantID  string         `json:"tenantId"`
	Provider  string         `json:"provider"`
	Name      string         `json:"name"`
	Config    map[string]any `json:"config"`
	Version   int64          `json:"version"`
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// ProviderAccount is the account as a provider call carries it: id,
// tenant, version (providers cache clients per id and version) and config.
func (a *Account) ProviderAccount() ProviderAccount {
	return ProviderAccount{ID: a.ID, TenantID: a.TenantID, Version: a.Version, Config: a.Config}
}

// Offer kinds.
const (
	KindVPS   = "vps"
	KindMetal = "metal"
)

// CPU architectures of an offer (Offer.Architecture), in Go's naming.
const (
	ArchAMD64 = "amd64" // x86-64 (Intel, AMD)
	ArchARM64 = "arm64" // 64-bit ARM (e.g. Hetzner's cax types, Ampere Altra)
)

// CapacityType says how an offer's machines are held: for as long as the
// caller keeps them, or on spare capacity the provider may take back.
type CapacityType string

// Capacity types of an offer, one per line with its meaning.
const (
	CapacityOnDemand CapacityType = "on-demand" // kept until deleted; interruptionProbability 0
	CapacitySpot     CapacityType = "spot"      // spare capacity the provider may reclaim at any time
)

// CapacityTypes lists every capacity type, in schema order.
func CapacityTypes() []CapacityType { return []CapacityType{CapacityOnDemand, CapacitySpot} }

// Offer is a machine shape a provider account can create: vCPUs, memory and
// disk in GiB, the gross price per hour in Currency (EUR for Hetzner), its
// capacity type and, for spot capacity, the provider's estimate of the
// probability (0..1) that a machine of it is interrupted (0 for on-demand
// offers; Hetzner Cloud and Proxmox offer on-demand capacity only).
type Offer struct {
	ID           string   `json:"id"`
	Kind         string   `json:"kind"`
	Region       string   `json:"region"`
	Vcpu         int      `json:"vcpu"`
	MemoryGiB    float64  `json:"memoryGiB"`
	DiskGiB      float64  `json:"diskGiB,omitempty"`
	GPUs         int      `json:"gpus,omitempty"`
	PricePerHour *float64 `json:"pricePerHour,omitempty"`
	// Architecture is the CPU architecture of the offer's machines
	// (ArchAMD64, ArchARM64); empty when the provider does not say.
	Architecture string `json:"architecture,omitempty"`
	Currency     string `json:"currency,omitempty"`
	Available    bool   `json:"available"`

	CapacityType            CapacityType `json:"capacityType"`
	InterruptionProbability float64      `json:"interruptionProbability"`

	// Product, CPU, Disks and Datacenter describe a dedicated server
	// offer (hetzner-robot), as the provider names them: the product
	// ("EX44"), the CPU model ("Intel® Core™ i5-13500"), the disks ("2 x
	// 512 GB NVMe SSD") and the data centre ("FSN1-DC14"). Empty for
	// providers of shapes rather than servers.
	Product    string   `json:"product,omitempty"`
	CPU        string   `json:"cpu,omitempty"`
	Disks      []string `json:"disks,omitempty"`
	Datacenter string   `json:"datacenter,omitempty"`
	// PricePerMonth is the provider's own monthly price (gross, in
	// Currency) where it bills by the month (Hetzner Robot); PricePerHour
	// is then PricePerMonth / HoursPerMonth, for comparisons. Nil where
	// the provider has an hourly price only.
	PricePerMonth *float64 `json:"pricePerMonth,omitempty"`
}

// OfferQuery filters offers; zero fields do not filter. GPUs > 0 asks for
// offers with at least that many GPUs.
type OfferQuery struct {
	Region       string  `json:"region,omitempty"`
	Kind         string  `json:"kind,omitempty"`
	MinVcpu      int     `json:"minVcpu,omitempty"`
	MinMemoryGiB float64 `json:"minMemoryGiB,omitempty"`
	GPUs         int     `json:"gpus,omitempty"`
	// Placement, when set, makes Offer.Available say whether a create of
	// a pool with this placement would find room where it places (Proxmox
	// VE: on one of placement.nodes). It filters nothing. accounts.offers
	// sets it from the pool AccountOffersRequest.PoolID names.
	Placement *PoolPlacement `json:"placement,omitempty"`
}

// Matches reports whether o passes every filter of q.
func (q OfferQuery) Matches(o Offer) bool {
	return (q.Region == "" || q.Region == o.Region) &&
		(q.Kind == "" || q.Kind == o.Kind) &&
		o.Vcpu >= q.MinVcpu &&
		o.MemoryGiB >= q.MinMemoryGiB &&
		o.GPUs >= q.GPUs
}

// regionPattern is what OfferQuery.Region may be: a Hetzner location
// (fsn1), a Robot data centre's location (fsn1) or a Proxmox VE node name,
// 1 to 63 letters, digits, dots, underscores and hyphens.
var regionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Check checks the query's filters before a provider is asked. Errors:
// INVALID_INPUT naming query.<field>: region not a location or node name
// (regionPattern), kind not "", vps or metal, a negative minVcpu,
// minMemoryGiB or gpus.
func (q OfferQuery) Check() error {
	switch {
	case q.Region != "" && !regionPattern.MatchString(q.Region):
		return InvalidInput("query.region", "region must be a location or node name: 1 to 63 letters, digits, '.', '_' and '-'")
	case q.Kind != "" && q.Kind != KindVPS && q.Kind != KindMetal:
		return InvalidInput("query.kind", "kind must be %s or %s", KindVPS, KindMetal)
	case q.MinVcpu < 0:
		return InvalidInput("query.minVcpu", "minVcpu must not be negative")
	case q.MinMemoryGiB < 0:
		return InvalidInput("query.minMemoryGiB", "minMemoryGiB must not be negative")
	case q.GPUs < 0:
		return InvalidInput("query.gpus", "gpus must not be negative")
	}
	return nil
}

// Pool classes and agents: class "provider" (and the host classes of
// bootstrap.go), agent "none".
const (
	PoolClassProvider = "provider"
	PoolAgentNone     = "none"
)

// Flavor names an offer of the pool's account, with an optional default image.
type Flavor struct {
	Name    string `json:"name"`
	OfferID string `json:"offerId"`
	Image   string `json:"image,omitempty"`
	// Storage is the Proxmox VE storage the flavor's disk is cloned to
	// (default: the template's).
	Storage string `json:"storage,omitempty"`
	// GrowDisk: a resize of an instance to this flavor grows the disk to
	// the offer's (Hetzner upgrade_disk, after which no resize to a smaller
	// disk is possible); false keeps today's disk where the provider can
	// (Proxmox VE always grows a disk the offer makes bigger).
	GrowDisk bool `json:"growDisk,omitempty"`
}

// Pool groups instances on one provider account; instances pick a flavor of it.
type Pool struct {
	ID                string    `json:"id"`
	TenantID          string    `json:"tenantId"`
	Name              string    `json:"name,omitempty"`
	SiteID            string    `json:"siteId,omitempty"`
	Class             string    `json:"class"`
	ProviderAccountID string    `json:"providerAccountId"`
	Agent             string    `json:"agent"`
	Flavors           []Flavor  `json:"flavors"`
	Version           int64     `json:"version"`
	CreatedAt         time.Time `json:"createdAt"`
	// DeletionRequestedAt is set while a pools.delete checks for instances;
	// instance creates in the pool are refused meanwhile.
	DeletionRequestedAt *time.Time `json:"deletionRequestedAt,omitempty"`
	// Access, when set, lets the platform reach the pool's machines over
	// SSH: configure after boot, drain before delete, exec and logs.
	Access *PoolAccess `json:"access,omitempty"`
	// Network and Placement declare how and where the pool's machines are
	// connected and run (see PoolNetwork, PoolPlacement).
	Network   *PoolNetwork   `json:"network,omitempty"`
	Placement *PoolPlacement `json:"placement,omitempty"`
	// Release says what the release of a host does before its server is
	// un-claimed (host pool classes only; nil: nothing more than the drain
	// step). See PoolRelease.
	Release *PoolRelease `json:"release,omitempty"`
	// Sized pools (poolsize.go): Sizes per flavor name (nil: not sized),
	// the instance Template and Rollout bounds, the current template
	// Revision (0 until the pool is first sized or templated) and the
	// PoolRevisionsKept newest Revisions; Status is the controller's view,
	// filled in by pools.get (never stored with the pool).
	Sizes     map[string]int `json:"sizes,omitempty"`
	Template  *PoolTemplate  `json:"template,omitempty"`
	Rollout   *PoolRollout   `json:"rollout,omitempty"`
	Revision  int64          `json:"revision,omitempty"`
	Revisions []PoolRevision `json:"revisions,omitempty"`
	Status    *PoolStatus    `json:"status,omitempty"`
}

// Flavor returns the pool's flavor called name.
func (p *Pool) Flavor(name string) (Flavor, bool) {
	for _, f := range p.Flavors {
		if f.Name == name {
			return f, true
		}
	}
	return Flavor{}, false
}

// DesiredState is what the caller asked for: the power level, and the
// latest one-shot operation (nil when none was asked for).
type DesiredState struct {
	Power     Power      `json:"power"`
	Operation *Operation `json:"operation,omitempty"`
}

// Instance is one machine a tenant asked for: the desired spec, and the
// status the reconciler observed. Generation increments on every mutation of
// the desired state; Status.ObservedGeneration is the generation the status
// reflects. Version is the record's optimistic-concurrency version.
type Instance struct {
	ID       string   `json:"id"`
	TenantID string   `json:"tenantId"`
	PoolID   string   `json:"poolId"`
	Flavor   string   `json:"flavor"`
	Image    string   `json:"image"`
	Name     string   `json:"name"`
	UserData string   `json:"userData,omitempty"`
	SSHKeys  []string `json:"sshKeys,omitempty"`
	// Labels are the instance's Kubernetes-style labels (ValidateLabels),
	// propagated to the machine (Hetzner labels, Proxmox VE tags).
	Labels              map[string]string `json:"labels,omitempty"`
	Desired             DesiredState      `json:"desired"`
	Status              InstanceStatus    `json:"status"`
	Generation          int64             `json:"generation"`
	Version             int64             `json:"version"`
	CreatedAt           time.Time         `json:"createdAt"`
	UpdatedAt           time.Time         `json:"updatedAt"`
	DeletionRequestedAt *time.Time        `json:"deletionRequestedAt,omitempty"`
	// Bootstrap is set on the instances of host pools (accounts.bootstrap):
	// the server the instance claims and how it is installed.
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
}

// InstanceStatus is what the reconciler last observed.
type InstanceStatus struct {
	Phase              Phase            `json:"phase"`
	Machine            *ExternalMachine `json:"machine,omitempty"`
	Conditions         []Condition      `json:"conditions,omitempty"`
	ObservedGeneration int64            `json:"observedGeneration"`
	// CreateRequested is set before the provider's create is called, so a
	// deletion knows a machine may exist even when its id was never recorded
	// (it looks the key up then, and never creates); it is cleared only when
	// the recorded machine is found gone (the next create is a first attempt).
	CreateRequested bool `json:"createRequested,omitempty"`
	// CreateRequestedAt is when the last create attempt was recorded, just
	// before it was sent (UTC): a deletion that finds no machine of the key
	// waits until that attempt cannot land any more.
	CreateRequestedAt *time.Time `json:"createRequestedAt,omitempty"`
	// Retries counts consecutive failed reconcile attempts (0 after a success).
	Retries int `json:"retries,omitempty"`
	// Polls counts the looks in a row that found the machine still on its
	// way (booting, stopping, being deleted) since the reconciler last acted
	// on it or a call failed; the next look waits longer with each.
	Polls         int              `json:"polls,omitempty"`
	LastOperation *OperationStatus `json:"lastOperation,omitempty"`
	// Access is what the platform learnt and did over SSH (pools with
	// access only): the pinned host key, configure and drain.
	Access *AccessStatus `json:"access,omitempty"`
	// AppliedLabels are the labels last given to the machine (at its
	// create, or by the last relabel): when the instance's labels differ,
	// the reconciler relabels the machine. Kept apart from Machine.Labels,
	// which is what the provider reports back and may be lossy (Proxmox VE
	// tags).
	AppliedLabels map[string]string `json:"appliedLabels,omitempty"`
	// Address is the static IPv4 address allocated to the instance from
	// its pool's network.addresses, recorded before the provider's create
	// is sent (every retry and re-create uses it) and released only once
	// no machine of the instance remains (nil: none allocated).
	Address *StaticAddress `json:"address,omitempty"`
	// Flavor is the flavor the machine is on (set when its create
	// succeeds, changed by a resize that succeeded); while it differs from
	// the instance's flavor, a resize is due or Resize says why not.
	Flavor string `json:"flavor,omitempty"`
	// Resize is the record of the latest resize (nil: none yet).
	Resize *ResizeStatus `json:"resize,omitempty"`
	// Bootstrap is where the bootstrap sequence is (instances with a
	// bootstrap spec only).
	Bootstrap *BootstrapStatus `json:"bootstrap,omitempty"`
	// AddressesPendingSince is when the reconciler first saw the machine
	// running with its addresses pending (ExternalMachine.AddressesPending);
	// nil once they are known. Ready stays False (reason AddressesPending)
	// meanwhile, and after 10 minutes (reason AddressesUnknown).
	AddressesPendingSince *time.Time `json:"addressesPendingSince,omitempty"`
}

// ExternalMachine is a machine as its provider reports it. ID is the
// provider's own id (a Hetzner server id, a Proxmox VMID) as a string.
// IdempotencyKey is the key the machine carries (a Hetzner label, a line of
// a Proxmox VM's description): callers compare it with theirs, because a
// provider may hand a freed id to another machine.
type ExternalMachine struct {
	ID             string       `json:"id"`
	IdempotencyKey string       `json:"idempotencyKey,omitempty"`
	Name           string       `json:"name,omitempty"`
	State          MachineState `json:"state"`
	OfferID        string       `json:"offerId,omitempty"`
	Region         string       `json:"region,omitempty"`
	Addresses      []string     `json:"addresses"`
	// AddressesPending is true when the machine runs but its provider
	// cannot tell its addresses yet (Proxmox VE with DHCP: the QEMU guest
	// agent does not answer, or reports no address, until some seconds
	// after the VM started); Addresses is empty then. The reconciler looks
	// again until they are known (see InstanceStatus.AddressesPendingSince).
	AddressesPending bool `json:"addressesPending,omitempty"`
	// SSHEndpoint is "host:port" where the machine's SSH server answers
	// when that is not its first address on the pool's port. Emulator-only
	// (Guess: no real provider reports one): the emulators' machines
	// listen on loopback ports (pkg/sshemu).
	SSHEndpoint string `json:"sshEndpoint,omitempty"`
	// Labels are the user labels the machine carries (system labels, such
	// as the idempotency key's, left out).
	Labels map[string]string `json:"labels,omitempty"`
	// PlacementNote says why the machine is not where the pool asked
	// first (e.g. "created in nbg1: no capacity (412
	// resource_unavailable) in fsn1 (…)"); empty when it is. Create
	// answers it; the reconciler records it as the Placed condition.
	PlacementNote string `json:"placementNote,omitempty"`
}

// Condition is one observed aspect of an instance, Kubernetes style. For
// ProviderError, Reason is the ComputeError code and RetryAt when the
// reconciler tries again.
type Condition struct {
	Type               ConditionType   `json:"type"`
	Status             ConditionStatus `json:"status"`
	Reason             ConditionReason `json:"reason,omitempty"`
	Message            string          `json:"message,omitempty"`
	LastTransitionTime time.Time       `json:"lastTransitionTime"`
	RetryAt            *time.Time      `json:"retryAt,omitempty"`
}

// Problem reports whether the condition reports a problem: True, and not
// one of the conditions that are True when all went well: Ready (the
// summary), Placed (a note on where the machine landed), Resized (a
// resize succeeded), Configured (configure exited 0) or Drained (the
// drain step exited 0). ProviderError, Drift and HostKeyChanged are
// problems when True.
func (c Condition) Problem() bool {
	switch c.Type {
	case ConditionReady, ConditionPlaced, ConditionResized, ConditionConfigured, ConditionDrained:
		return false
	}
	return c.Status == ConditionTrue
}

// Event is published on compute.v1.<tenant>.events.<resource>.<id>.<type>
// and kept in the COMPUTE_EVENTS stream.
type Event struct {
	ID         string    `json:"id"`
	TenantID   string    `json:"tenantId"`
	Resource   string    `json:"resource"`
	ResourceID string    `json:"resourceId"`
	Type       EventType `json:"type"`
	Phase      Phase     `json:"phase,omitempty"`
	Message    string    `json:"message,omitempty"`
	Generation int64     `json:"generation,omitempty"`
	// Labels are the instance's labels when the event was emitted (events
	// of instances).
	Labels map[string]string `json:"labels,omitempty"`
	Time   time.Time         `json:"time"`
}

// Operation is a one-shot action the caller asked for (reset, cycle,
// graceful-restart, graceful-off, nmi, reinstall): executed at most once,
// its outcome recorded in InstanceStatus.LastOperation.
type Operation struct {
	ID          string      `json:"id"`
	Action      PowerAction `json:"action"`
	Image       string      `json:"image,omitempty"`
	RequestedAt time.Time   `json:"requestedAt"`
}

// OperationStatus is the recorded outcome of an Operation.
type OperationStatus struct {
	ID         string         `json:"id"`
	Action     PowerAction    `json:"action"`
	State      OperationState `json:"state"`
	Message    string         `json:"message,omitempty"`
	StartedAt  time.Time      `json:"startedAt"`
	FinishedAt *time.Time     `json:"finishedAt,omitempty"`
}
