package api

import "time"

// Sized pools (issue 15): a pool that declares Sizes is kept at that many
// instances per flavor by the pool controller (services/poolctl), every
// instance made from the pool's current template revision. A template
// change is a new revision, rolled over the pool within Rollout (a deploy);
// pools.rollback makes a new revision from an earlier one's template.

// Labels the pool controller sets on every instance it makes (and that reach
// the machine with the instance's labels). They are ordinary user labels,
// not under the platform's better-compute.io prefix: the controller is a
// client of instances.create, which refuses that prefix, and machines show
// them. Users may read and select on them; the controller keeps its own
// record of the instances it made, so changing them does not move an
// instance in or out of a pool. A pool template may not set keys under
// compute.pool/.
const (
	// LabelPoolID names the pool that made the instance (its id).
	LabelPoolID = "compute.pool/id"
	// LabelPoolRevision is the template revision the instance was made
	// from, in decimal.
	LabelPoolRevision = "compute.pool/revision"
	// LabelPoolSlot is the instance's ordinal in the pool, in decimal:
	// never reused, so its idempotency key is never reused either.
	LabelPoolSlot = "compute.pool/slot"
)

// Limits of sized pools.
const (
	// MaxPoolSize bounds one flavor's size.
	MaxPoolSize = 1000
	// PoolRevisionsKept is how many template revisions a pool keeps (the
	// newest ones): pools.rollback can name any of them.
	PoolRevisionsKept = 10
	// MaxPoolTemplateLabels bounds the labels of a template.
	MaxPoolTemplateLabels = 32
)

// Default rollout: one instance at a time, never below the size (a new
// instance is made and runs before an old one is deleted).
const (
	DefaultMaxSurge       = 1
	DefaultMaxUnavailable = 0
)

// PoolTemplate is what each instance a sized pool makes is created with:
// Image (empty: the flavor's image), Labels (the controller's LabelPool*
// labels are added), UserData (at most 32 KiB of cloud-init, no secret
// references or private keys) and SSHKeys (OpenSSH public keys).
type PoolTemplate struct {
	Image    string            `json:"image,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	UserData string            `json:"userData,omitempty"`
	SSHKeys  []string          `json:"sshKeys,omitempty"`
}

// PoolRollout bounds a rollout, as a Kubernetes Deployment's rolling
// update does (in instances, per flavor, never percentages): at most
// MaxSurge instances above the size, at most MaxUnavailable of the size not
// Running. Not both zero. Absent: DefaultMaxSurge, DefaultMaxUnavailable.
type PoolRollout struct {
	MaxSurge       int `json:"maxSurge"`
	MaxUnavailable int `json:"maxUnavailable"`
}

// RolloutOrDefault is p's rollout, or the default when it has none.
func (p *Pool) RolloutOrDefault() PoolRollout {
	if p.Rollout == nil {
		return PoolRollout{MaxSurge: DefaultMaxSurge, MaxUnavailable: DefaultMaxUnavailable}
	}
	return *p.Rollout
}

// PoolRevision is one template revision of a pool: its number (1, 2, …,
// never reused), the template, when it was made and, for a revision made
// by pools.rollback, the revision whose template it took.
type PoolRevision struct {
	Revision   int64        `json:"revision"`
	Template   PoolTemplate `json:"template"`
	CreatedAt  time.Time    `json:"createdAt"`
	RollbackOf int64        `json:"rollbackOf,omitempty"`
}

// RevisionTemplate is the template of p's revision rev, and whether p
// still keeps it.
func (p *Pool) RevisionTemplate(rev int64) (PoolTemplate, bool) {
	for _, r := range p.Revisions {
		if r.Revision == rev {
			return r.Template, true
		}
	}
	return PoolTemplate{}, false
}

// RolloutState summarises a sized pool's status.
type RolloutState string

// Rollout states, one per line with its meaning.
const (
	RolloutComplete    RolloutState = "Complete"    // every flavor at its size, all on the target revision, all Running
	RolloutScaling     RolloutState = "Scaling"     // instances are being made or deleted to reach the size
	RolloutProgressing RolloutState = "Progressing" // instances of an older revision are being replaced
)

// Condition types of a pool's status (PoolStatus.Conditions).
const (
	// ConditionAvailable is True while at least size − maxUnavailable
	// instances of every flavor are Running.
	ConditionAvailable ConditionType = "Available"
	// ConditionProgressing is True while the pool scales or rolls out
	// (Reason Scaling or NewRevision), False once complete (Reason Complete).
	ConditionProgressing ConditionType = "Progressing"
)

// Reasons of the pool conditions.
const (
	ReasonScaling     ConditionReason = "Scaling"     // Progressing: replicas differ from the size
	ReasonNewRevision ConditionReason = "NewRevision" // Progressing: instances of an older revision remain
	ReasonComplete    ConditionReason = "Complete"    // Progressing False: nothing left to do
	ReasonMinimum     ConditionReason = "Minimum"     // Available: at least size − maxUnavailable Running
	ReasonBelowMin    ConditionReason = "BelowMinimum"
)

// PoolFlavorStatus counts one flavor's instances made by the pool:
// Replicas (not being deleted), Updated (of those, on the target revision)
// and Ready (of those, Running), against Size.
type PoolFlavorStatus struct {
	Flavor   string `json:"flavor"`
	Size     int    `json:"size"`
	Replicas int    `json:"replicas"`
	Updated  int    `json:"updated"`
	Ready    int    `json:"ready"`
}

// PoolStatus is what the pool controller last observed of a sized pool
// (pools.get): ObservedVersion is the pool version it acted on,
// TargetRevision the pool's revision, CurrentRevision the oldest revision
// still among the replicas (equal to TargetRevision once rolled out),
// counts summed over the flavors and per flavor, the rollout state, a
// message and the Available and Progressing conditions.
type PoolStatus struct {
	ObservedVersion int64              `json:"observedVersion"`
	TargetRevision  int64              `json:"targetRevision"`
	CurrentRevision int64              `json:"currentRevision"`
	Replicas        int                `json:"replicas"`
	Updated         int                `json:"updated"`
	Ready           int                `json:"ready"`
	Flavors         []PoolFlavorStatus `json:"flavors"`
	Rollout         RolloutState       `json:"rollout"`
	Message         string             `json:"message,omitempty"`
	Conditions      []Condition        `json:"conditions,omitempty"`
	UpdatedAt       time.Time          `json:"updatedAt"`
}

// PoolUpdateRequest changes a pool (pools.update). Sizes sets the size of
// the flavors it names (others keep theirs; a pool with sizes is sized from
// then on, 0 scales a flavor to none). Template, when present, replaces the
// template: a template other than the current one is a new revision, rolled
// over the pool (a deploy). Rollout, when present, replaces the rollout
// bounds. Version, when set, must be the pool's version (CONFLICT
// otherwise).
type PoolUpdateRequest struct {
	TenantID string         `json:"tenantId,omitempty"`
	ID       string         `json:"id"`
	Version  int64          `json:"version,omitempty"`
	Sizes    map[string]int `json:"sizes,omitempty"`
	Template *PoolTemplate  `json:"template,omitempty"`
	Rollout  *PoolRollout   `json:"rollout,omitempty"`
}

// PoolRollbackRequest rolls a pool back (pools.rollback): a new revision
// whose template is that of Revision (default: the revision before the
// current one), rolled over the pool like a deploy. Version as in
// PoolUpdateRequest.
type PoolRollbackRequest struct {
	TenantID string `json:"tenantId,omitempty"`
	ID       string `json:"id"`
	Version  int64  `json:"version,omitempty"`
	Revision int64  `json:"revision,omitempty"`
}

// PoolControl is the pool controller's record of one pool
// (compute_poolctl, key <tenant>.<poolId>; owner services/poolctl, read by
// accounts for pools.get's status). It is not on the wire but for Status.
//
// Holder and LeaseExpiresAt are the lease: a controller acts on the pool
// only while it holds an unexpired lease, taken and renewed by CAS writes
// of this record. Slots are the instances the controller made or is
// making, each under an ordinal never reused (NextOrdinal is the next one):
// a slot is written before its create is sent, so a controller that takes
// over re-sends the create of every slot without an instance, with the
// same idempotency key, instead of making another.
type PoolControl struct {
	Holder         string     `json:"holder,omitempty"`
	LeaseExpiresAt time.Time  `json:"leaseExpiresAt"`
	NextOrdinal    int64      `json:"nextOrdinal"`
	Slots          []PoolSlot `json:"slots,omitempty"`
	Status         PoolStatus `json:"status"`
}

// PoolSlot is one instance of a sized pool: its ordinal, flavor, template
// revision and image (the template's or, without one, the flavor's when the
// slot was made: a create sent again is the same request), the instance id
// once the create answered, and whether its delete was asked for.
type PoolSlot struct {
	Ordinal         int64     `json:"ordinal"`
	Flavor          string    `json:"flavor"`
	Revision        int64     `json:"revision"`
	Image           string    `json:"image"`
	InstanceID      string    `json:"instanceId,omitempty"`
	DeleteRequested bool      `json:"deleteRequested,omitempty"`
	CreatedAt       time.Time `json:"createdAt"`
}
