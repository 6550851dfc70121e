package api

import (
	"slices"
	"time"
)

// ProviderResizeRequest moves a machine to another offer (provider verb
// resize, capability "resize"), keeping its id and disk contents.
// OfferID is the offer to move to. DiskGrow grows the disk to the offer's
// size (Hetzner upgrade_disk: no later move to a smaller disk; Proxmox
// always grows a disk the offer makes bigger, and never shrinks one); false
// keeps today's disk where the provider can. Power is the power state the
// machine must be left in (PowerOn or PowerOff; empty: as it was before).
// IdempotencyKey, when set, is the key the caller's machine carries: a
// machine with this id carrying another key is NOT_FOUND, never touched.
type ProviderResizeRequest struct {
	Account        ProviderAccount `json:"account"`
	ID             string          `json:"id"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	OfferID        string          `json:"offerId"`
	DiskGrow       bool            `json:"diskGrow,omitempty"`
	Power          Power           `json:"power,omitempty"`
}

// ResizeResult is what a resize did: the machine as it is afterwards
// (its OfferID the new offer), whether anything was changed (false: it was
// on the offer already, and nothing was sent), and whether the machine was
// restarted to apply the size (a Hetzner power-off and on, a Proxmox
// reboot for changes its hot-plug settings do not take live).
type ResizeResult struct {
	Machine  *ExternalMachine `json:"machine"`
	Changed  bool             `json:"changed"`
	Rebooted bool             `json:"rebooted,omitempty"`
}

// ResizeState is the state of an instance's resize (status.resize.state).
type ResizeState string

// Resize states. Like a one-shot operation's (OperationState), a resize
// is claimed (Executing) before the provider is called, and never sent
// twice for one generation.
const (
	ResizeExecuting ResizeState = "Executing" // claimed, being sent
	ResizeSucceeded ResizeState = "Succeeded" // the machine is on the new flavor
	ResizeFailed    ResizeState = "Failed"    // refused or failed; the machine is on status.flavor
	// ResizeUnknown: interrupted after it may have been sent, and the
	// machine was not found on the new offer: not repeated; status.flavor
	// names the flavor the machine was last seen on.
	ResizeUnknown ResizeState = "Unknown"
)

// ResizeStatus is the record of an instance's latest resize
// (status.resize): from which flavor to which (Flavor, with its OfferID),
// for which generation, its state, and, for a failure, the error's code
// and the request field it names (Path: "flavor" for a flavor the machine
// cannot move to, e.g. a smaller disk than today's). Rebooted says the
// machine was restarted to apply it.
type ResizeStatus struct {
	Flavor     string      `json:"flavor"`
	FromFlavor string      `json:"fromFlavor"`
	OfferID    string      `json:"offerId"`
	Generation int64       `json:"generation"`
	State      ResizeState `json:"state"`
	Code       Code        `json:"code,omitempty"`
	Path       string      `json:"path,omitempty"`
	Message    string      `json:"message,omitempty"`
	Rebooted   bool        `json:"rebooted,omitempty"`
	StartedAt  time.Time   `json:"startedAt"`
	FinishedAt *time.Time  `json:"finishedAt,omitempty"`
}

// MetricsType is a family of usage metrics (instances.metrics type).
type MetricsType string

// Metrics types and the series each answers (Series.Name; Hetzner Cloud's
// names, which the Proxmox provider maps its rrddata fields to).
const (
	MetricsCPU     MetricsType = "cpu"     // cpu (percent of one vCPU, summed over vCPUs)
	MetricsDisk    MetricsType = "disk"    // disk.0.bandwidth.read|write (bytes/s), disk.0.iops.read|write (Hetzner)
	MetricsNetwork MetricsType = "network" // network.0.bandwidth.in|out (bytes/s), network.0.pps.in|out (Hetzner)
)

// MetricsTypes returns every metrics type, in the order of schemas/v1.
func MetricsTypes() []MetricsType { return []MetricsType{MetricsCPU, MetricsDisk, MetricsNetwork} }

// Metrics window limits, checked by MetricsWindow.Check.
const (
	// MaxMetricsAge is how far back metrics reach (Hetzner keeps 30 days).
	MaxMetricsAge = 30 * 24 * time.Hour
	// MaxMetricsPoints bounds the points of one series ((to-from)/step):
	// Hetzner answers at most 500.
	MaxMetricsPoints = 500
	// DefaultMetricsPoints is the number of points an absent step aims at.
	DefaultMetricsPoints = 200
)

// MetricsWindow is the window of a metrics request: the type, the time
// range [From, To) (RFC3339) and the step between points in seconds (0:
// chosen so that the window has about DefaultMetricsPoints points).
type MetricsWindow struct {
	Type MetricsType `json:"type"`
	From time.Time   `json:"from"`
	To   time.Time   `json:"to"`
	Step int64       `json:"step,omitempty"`
}

// Check validates the window at now: type one of MetricsTypes, from and to
// set, from before to, from not older than MaxMetricsAge, to not after
// now + 1 h, step ≥ 0 and at most MaxMetricsPoints points. Errors:
// INVALID_INPUT naming type, from, to or step.
func (w MetricsWindow) Check(now time.Time) error {
	switch {
	case !slices.Contains(MetricsTypes(), w.Type):
		return InvalidInput("type", "type must be one of %v", MetricsTypes())
	case w.From.IsZero():
		return InvalidInput("from", "from is required (RFC3339)")
	case w.To.IsZero():
		return InvalidInput("to", "to is required (RFC3339)")
	case !w.From.Before(w.To):
		return InvalidInput("from", "from must be before to")
	case w.From.Before(now.Add(-MaxMetricsAge)):
		return InvalidInput("from", "from reaches back at most %s", MaxMetricsAge)
	case w.To.After(now.Add(time.Hour)):
		return InvalidInput("to", "to is in the future")
	case w.Step < 0:
		return InvalidInput("step", "step must be a positive number of seconds")
	case w.Step > 0 && int64(w.To.Sub(w.From)/time.Second)/w.Step > MaxMetricsPoints:
		return InvalidInput("step", "step gives more than %d points; use a larger step or a shorter window", MaxMetricsPoints)
	}
	return nil
}

// StepOrDefault is the step in seconds: Step, or the one giving about
// DefaultMetricsPoints points (at least 1 s).
func (w MetricsWindow) StepOrDefault() int64 {
	if w.Step > 0 {
		return w.Step
	}
	return max(int64(w.To.Sub(w.From)/time.Second)/DefaultMetricsPoints, 1)
}

// InstanceMetricsRequest asks for usage metrics of an instance's machine
// (instances.metrics).
type InstanceMetricsRequest struct {
	TenantID string `json:"tenantId,omitempty"`
	ID       string `json:"id"`
	MetricsWindow
}

// Check validates the request at now. Errors: INVALID_INPUT naming id,
// type, from, to or step.
func (r *InstanceMetricsRequest) Check(now time.Time) error {
	if !ValidID(PrefixInstance, r.ID) {
		return notAnInstanceID()
	}
	return r.MetricsWindow.Check(now)
}

// ProviderMetricsRequest asks a provider for a machine's metrics (provider
// verb metrics, capability "metrics").
type ProviderMetricsRequest struct {
	Account        ProviderAccount `json:"account"`
	ID             string          `json:"id"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	MetricsWindow
}

// MetricPoint is one sample: the start of its slot and its value.
type MetricPoint struct {
	Time  time.Time `json:"time"`
	Value float64   `json:"value"`
}

// MetricSeries is one named series (see MetricsType) with its unit
// (percent, bytes/s, iops, packets/s) and points in ascending time.
type MetricSeries struct {
	Name   string        `json:"name"`
	Unit   string        `json:"unit"`
	Points []MetricPoint `json:"points"`
}

// Metrics is the answer of instances.metrics and of the provider's
// metrics: the window actually served (a provider may widen the step) and
// the series, sorted by name.
type Metrics struct {
	Type   MetricsType    `json:"type"`
	From   time.Time      `json:"from"`
	To     time.Time      `json:"to"`
	Step   int64          `json:"step"`
	Series []MetricSeries `json:"series"`
}

// ConditionResized reports the latest resize: True (reason Resized) when
// the machine moved to the instance's flavor; False when it failed or was
// interrupted, with the error's code as reason (or ReasonResizeUnknown)
// and a message naming the flavor the machine is on.
const ConditionResized ConditionType = "Resized"

// Reasons of the Resized condition besides ComputeError codes.
const (
	ReasonResized       ConditionReason = "Resized"       // Resized: the machine is on the new flavor
	ReasonResizeUnknown ConditionReason = "ResizeUnknown" // Resized: interrupted; not repeated
)
