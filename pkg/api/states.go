package api

import "strings"

// This file declares every state value a client sees on the wire: phases,
// machine states, power levels and actions, operation states, condition
// types, statuses and reasons, and event types. schemas/v1 enumerates the
// same values (TestEnumsMatchGo).

// Phase is an instance's phase (status.phase): a summary derived from the
// instance's facts by the reconciler (see services/reconciler/phase.go),
// never an input to its decisions.
type Phase string

// Instance phases.
const (
	PhasePending      Phase = "Pending"      // recorded, no create requested yet
	PhaseProvisioning Phase = "Provisioning" // a machine is being made (or re-made)
	PhaseRunning      Phase = "Running"      // the machine runs (or is in rescue)
	PhaseStopped      Phase = "Stopped"      // the machine is powered off
	PhaseReinstalling Phase = "Reinstalling" // a reinstall runs on the machine
	PhaseDeleting     Phase = "Deleting"     // deletion requested, machine and record going
	PhaseFailed       Phase = "Failed"       // a terminal failure of this generation
)

// Phases returns every phase, in the order of schemas/v1 (a fresh copy).
func Phases() []Phase {
	return []Phase{PhasePending, PhaseProvisioning, PhaseRunning, PhaseStopped, PhaseReinstalling, PhaseDeleting, PhaseFailed}
}

// Power is a desired power level (desired.power, instances.create's power).
type Power string

// Desired power levels (level state of an instance).
const (
	PowerOn  Power = "on"
	PowerOff Power = "off"
)

// PowerAction is a power action a caller may ask for (instances.power and
// the provider power subject), or the action of a one-shot operation
// (desired.operation.action, which may also be ActionReinstall).
type PowerAction string

// Power actions. On and off are level state; the others are one-shot
// operations.
const (
	ActionOn              PowerAction = "on"               // power on
	ActionOff             PowerAction = "off"              // power off hard
	ActionGracefulOff     PowerAction = "graceful-off"     // ACPI shutdown; desired power becomes off
	ActionReset           PowerAction = "reset"            // hard reset
	ActionCycle           PowerAction = "cycle"            // power off, then on
	ActionGracefulRestart PowerAction = "graceful-restart" // ACPI reboot
	ActionNMI             PowerAction = "nmi"              // non-maskable interrupt
)

// ActionReinstall names the reinstall operation in Operation.Action; it is
// not a power action (PowerActions does not list it).
const ActionReinstall PowerAction = "reinstall"

// PowerActions returns every power action, in the order of schemas/v1
// (a fresh copy).
func PowerActions() []PowerAction {
	return []PowerAction{ActionOn, ActionOff, ActionGracefulOff, ActionReset, ActionCycle, ActionGracefulRestart, ActionNMI}
}

// MachineState is a machine's state as its provider reports it
// (ExternalMachine.State).
type MachineState string

// Machine states reported by providers.
const (
	StatePending  MachineState = "pending"  // being made or booting
	StateRunning  MachineState = "running"  // powered on
	StateStopped  MachineState = "stopped"  // powered off
	StateRescue   MachineState = "rescue"   // running a rescue system
	StateDeleting MachineState = "deleting" // being deleted
	StateDeleted  MachineState = "deleted"  // gone
	StateError    MachineState = "error"    // the provider reports it broken
	StateUnknown  MachineState = "unknown"  // not known (e.g. after a reinstall until the next look)
)

// MachineStates returns every machine state, in the order of schemas/v1
// (a fresh copy).
func MachineStates() []MachineState {
	return []MachineState{StatePending, StateRunning, StateStopped, StateRescue, StateDeleting, StateDeleted, StateError, StateUnknown}
}

// OperationState is the state of a one-shot operation
// (status.lastOperation.state).
type OperationState string

// Operation states.
const (
	OperationExecuting OperationState = "Executing" // claimed, being sent
	OperationSucceeded OperationState = "Succeeded" // the provider carried it out
	OperationFailed    OperationState = "Failed"    // the provider refused or failed it
	// OperationUnknown marks an operation that may have run without its
	// outcome being learnt (no reply came, or the pass was interrupted after
	// sending it): it is never sent again, since reset or reinstall must not
	// run twice. One the provider proves it did not run
	// (ErrorDetails.NotExecuted) is sent again instead.
	OperationUnknown OperationState = "Unknown"
)

// ConditionType names a condition (status.conditions[].type).
type ConditionType string

// Condition types. Ready summarises an instance: True when its machine was
// last seen as declared; False while it is on its way or a provider call
// failed, with the failure's code as Reason and its error as Message (back
// to True once the machine is seen as declared again). ProviderError is True
// while provider calls fail, and after a one-shot operation failed (until
// the next operation starts). Drift is True while a machine found changed
// or missing out of band is being corrected.
const (
	ConditionReady         ConditionType = "Ready"
	ConditionProviderError ConditionType = "ProviderError"
	ConditionDrift         ConditionType = "Drift"
)

// ConditionStatus is a condition's status: True or False.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue  ConditionStatus = "True"
	ConditionFalse ConditionStatus = "False"
)

// ConditionReason says why a condition has its status. A ProviderError
// condition, and a Ready condition False because of a failure, carry the
// ComputeError code as their reason (ReasonOf).
type ConditionReason string

// Condition reasons besides ComputeError codes.
const (
	ReasonConverged      ConditionReason = "Converged"      // Ready: the machine is as declared
	ReasonConverging     ConditionReason = "Converging"     // Ready: the machine is on its way
	ReasonResolved       ConditionReason = "Resolved"       // ProviderError, Drift: no longer true
	ReasonPowerChanged   ConditionReason = "PowerChanged"   // Drift: power changed out of band
	ReasonMachineMissing ConditionReason = "MachineMissing" // Drift, Ready: machine deleted out of band
)

// Reasons of a Ready condition False for a machine that runs as desired
// but whose addresses its provider cannot tell yet
// (ExternalMachine.AddressesPending): AddressesPending while the
// reconciler looks again, AddressesUnknown once they stayed pending for
// 10 minutes (it stops looking; a later pass, after a spec or power
// change or a resync, looks once more).
const (
	ReasonAddressesPending ConditionReason = "AddressesPending"
	ReasonAddressesUnknown ConditionReason = "AddressesUnknown"
)

// ReasonQuotaExceeded is the reason of a ProviderError (and Ready)
// condition for a provider refusing a create because the account's quota
// is reached (Hetzner Cloud's 403 resource_limit_exceeded): retried after
// the provider's details.retryAfterMs, not at once.
const ReasonQuotaExceeded ConditionReason = "QuotaExceeded"

// ReasonOf is the condition reason of a ComputeError code.
func ReasonOf(code Code) ConditionReason { return ConditionReason(code) }

// EventType is an event's type (Event.Type, the last token of its subject).
type EventType string

// Event types besides the phase events (PhaseEvent).
const (
	EventCreated EventType = "created" // the instance was recorded
	EventDeleted EventType = "deleted" // the instance's record is gone
	EventDrift   EventType = "drift"   // its machine was found changed or missing out of band
)

// PhaseEvent is the event type of an instance entering phase: the phase
// lower-cased ("running", "deleting", …).
func PhaseEvent(p Phase) EventType { return EventType(strings.ToLower(string(p))) }
