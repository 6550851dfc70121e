package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"better-compute.io/compute/pkg/provider"
)

// Profiles a provider may claim. A behaviour belongs to one or more; the
// ones outside the claimed profiles are skipped.
const (
	// ProfileCore is what every provider must pass: definition, offers,
	// lifecycle (and every capability it claims) and error codes.
	ProfileCore = "core"
	// ProfileCloud needs an Inventory hook into the provider's backend:
	// machines made or removed out of band.
	ProfileCloud = "cloud"
	// ProfileFaults drives the provider's API into failures through Faults.
	ProfileFaults = "faults"
	// ProfileDurable kills and restarts the provider service (Service).
	ProfileDurable = "durable"
	// ProfileTransport covers the bus: no responders, late replies,
	// duplicated requests, large lists, reconnects.
	ProfileTransport = "transport"
	// ProfileSecrets looks for secret values in replies, logs and reports.
	ProfileSecrets = "secrets"
	// ProfileScale lists a large inventory and measures p99 latencies.
	ProfileScale = "scale"
	// ProfileSpot checks the capacity type and interruption probability of
	// offers; its behaviours need provider.CapabilitySpot, so a provider
	// that claims no spot capacity (Hetzner Cloud, Proxmox) skips them,
	// which passes, with the reason "capability spot not claimed".
	ProfileSpot = "spot"
	// ProfileSSH logs in to the provider's machines over SSH (the Subject's
	// SSH hook): configure and drain steps run, host keys are pinned. Its
	// behaviours need provider.CapabilitySSH.
	ProfileSSH = "ssh"
	// ProfileLabels gives machines labels at create and by relabel and
	// reads them back; its behaviours need provider.CapabilityLabels.
	ProfileLabels = "labels"
	// ProfileNetwork attaches machines to the pool network and placement
	// a provider claims (the Subject's Network or NodeNetwork hook):
	// public IPs off, private networks, firewalls, spread placement
	// groups, ordered locations; bridges, VLAN tags, static addresses,
	// node placement. Each behaviour needs its provider.Capability*.
	ProfileNetwork = "network"
	// ProfileMetal is for providers of rented machines that are claimed,
	// not created (provides metal: hetzner-robot): a claim is exclusive
	// and a release frees the machine.
	ProfileMetal = "metal"
)

// Profiles lists every profile.
var Profiles = []string{ProfileCore, ProfileCloud, ProfileFaults, ProfileDurable, ProfileTransport, ProfileSecrets, ProfileScale,
	ProfileSpot, ProfileSSH, ProfileLabels, ProfileNetwork, ProfileMetal}

// Areas group behaviours; every id starts with its area's short name.
const (
	AreaDefinition = "definition" // def.*
	AreaOffers     = "offers"     // offers.*
	AreaLifecycle  = "lifecycle"  // life.*
	AreaErrors     = "errors"     // err.*
	AreaFaults     = "faults"     // fault.*
	AreaDurable    = "durable"    // durable.*
	AreaTransport  = "transport"  // transport.*
	AreaSecrets    = "secrets"    // secrets.*
	AreaScale      = "scale"      // scale.*
	AreaSSH        = "ssh"        // ssh.*
	AreaLabels     = "labels"     // labels.*
	AreaNetwork    = "network"    // net.*
	AreaResize     = "resize"     // resize.*
	AreaMetrics    = "metrics"    // metrics.*
	AreaMetal      = "metal"      // metal.*
)

// hook names a Subject hook a behaviour cannot run without.
type hook uint8

const (
	needFaults hook = 1 << iota
	needInventory
	needService
	needSecretValues
	needLogs
	needSSH
	needNetwork
	needNodeNetwork
)

// Behaviour is one checked property of a provider. ID is stable forever
// (the registry is append-only); Capability is the capability it needs
// ("" for none, else provider.Capability*).
type Behaviour struct {
	ID         string
	Area       string
	Title      string
	Profiles   []string
	Capability string

	needs hook
	run   func(c *check)
}

// Needs lists the Subject hooks the behaviour cannot run without ("Faults",
// "Inventory", "Service", "SecretValues", "Logs", "SSH", "Network").
func (b Behaviour) Needs() []string {
	var out []string
	for _, h := range hooks {
		if b.needs&h.bit != 0 {
			out = append(out, h.name)
		}
	}
	return out
}

var hooks = []struct {
	bit  hook
	name string
}{{needFaults, "Faults"}, {needInventory, "Inventory"}, {needService, "Service"}, {needSecretValues, "SecretValues"}, {needLogs, "Logs"},
	{needSSH, "SSH"}, {needNetwork, "Network"}, {needNodeNetwork, "NodeNetwork"}}

// registry is the frozen behaviour table. Append only: never remove,
// rename, reorder or re-profile an entry (TestRegistryAppendOnly compares
// its canonical lines with testdata/registry.golden).
var registry = []Behaviour{
	{ID: "def.describe", Area: AreaDefinition, Profiles: core, run: defDescribe,
		Title: "describe answers a valid definition: extension provider, id, semantic version, provides, capabilities and manifest"},
	{ID: "def.config-schema", Area: AreaDefinition, Profiles: core, run: defConfigSchema,
		Title: "the config schema compiles as JSON Schema 2020-12, accepts the account config and refuses unknown or missing fields"},
	{ID: "def.define-refuses", Area: AreaDefinition, Profiles: core, run: defDefineRefuses,
		Title: "provider.Define refuses each broken variant of the described definition with INVALID_CONFIG and the path"},
	{ID: "def.builds-client", Area: AreaDefinition, Profiles: core, run: defBuildsClient,
		Title: "a call with the subject's account builds a client and succeeds"},

	{ID: "offers.wellformed", Area: AreaOffers, Profiles: core, run: offersWellFormed,
		Title: "every offer is well typed and in range; prices are finite and >= 0 when present"},
	{ID: "offers.includes-subject", Area: AreaOffers, Profiles: core, run: offersIncludesSubject,
		Title: "the offers include the subject's offer"},
	{ID: "offers.none-for-huge", Area: AreaOffers, Profiles: core, run: offersNoneForHuge,
		Title: "minVcpu 1000000 answers an empty list, not an error"},
	{ID: "offers.filters", Area: AreaOffers, Profiles: core, run: offersFilters,
		Title: "region, kind, minVcpu, minMemoryGiB and gpus filters are honoured"},

	{ID: "life.create.retry-same-key", Area: AreaLifecycle, Profiles: core, run: lifeRetrySameKey,
		Title: "a retried create with the same idempotency key names the same machine"},
	{ID: "life.create.concurrent-same-key", Area: AreaLifecycle, Profiles: core, run: lifeConcurrentSameKey,
		Title: "concurrent creates with the same key make one machine"},
	{ID: "life.create.distinct-keys", Area: AreaLifecycle, Profiles: core, run: lifeDistinctKeys,
		Title: "creates with distinct keys make distinct machines"},
	{ID: "life.get.follows-to-running", Area: AreaLifecycle, Profiles: core, run: lifeFollowsToRunning,
		Title: "get follows a new machine to running"},
	{ID: "life.delete.removes", Area: AreaLifecycle, Profiles: core, run: lifeDeleteRemoves,
		Title: "delete removes the machine: get then answers absent"},
	{ID: "life.delete.twice-not-found", Area: AreaLifecycle, Profiles: core, run: lifeDeleteTwice,
		Title: "a second delete fails only with NOT_FOUND"},
	{ID: "life.get.unknown-absent", Area: AreaLifecycle, Profiles: core, run: lifeGetUnknown,
		Title: "get of an unknown id answers absent (machine null), not an error"},
	{ID: "life.power.stop-start", Area: AreaLifecycle, Profiles: core, Capability: provider.CapabilityPower, run: lifePower,
		Title: "power off stops and power on starts the machine (observed when power is observable)"},
	{ID: "life.reinstall.keeps-id", Area: AreaLifecycle, Profiles: core, Capability: provider.CapabilityReinstall, run: lifeReinstall,
		Title: "reinstall keeps the machine's id and it comes back running"},
	{ID: "life.list.includes-ours", Area: AreaLifecycle, Profiles: core, Capability: provider.CapabilityList, run: lifeListIncludesOurs,
		Title: "list pages include our machines, each once"},
	{ID: "life.list.only-managed", Area: AreaLifecycle, Profiles: cloud, Capability: provider.CapabilityList, needs: needInventory,
		run: lifeListOnlyManaged, Title: "list includes only managed machines, never ones made outside this system"},
	{ID: "life.caps.unclaimed-unsupported", Area: AreaLifecycle, Profiles: core, run: lifeUnclaimedUnsupported,
		Title: "a capability not claimed answers UNSUPPORTED"},
	{ID: "life.drift.removed-absent", Area: AreaLifecycle, Profiles: cloud, needs: needInventory, run: lifeDriftRemoved,
		Title: "a machine removed out of band answers absent, and delete NOT_FOUND"},

	{ID: "err.missing.not-found", Area: AreaErrors, Profiles: core, run: errMissingNotFound,
		Title: "delete, power and reinstall of a missing machine answer NOT_FOUND"},
	{ID: "err.input.empty-id", Area: AreaErrors, Profiles: core, run: errEmptyID,
		Title: "an empty machine id answers INVALID_INPUT naming id"},
	{ID: "err.input.wrong-types", Area: AreaErrors, Profiles: core, run: errWrongTypes,
		Title: "fields of the wrong JSON type answer INVALID_INPUT"},
	{ID: "err.input.oversized", Area: AreaErrors, Profiles: core, run: errOversized,
		Title: "oversized ids, keys, names, images and user data answer INVALID_INPUT"},
	{ID: "err.input.malformed", Area: AreaErrors, Profiles: core, run: errMalformed,
		Title: "malformed JSON bodies answer INVALID_INPUT"},
	{ID: "err.input.unknown-field", Area: AreaErrors, Profiles: core, run: errUnknownField,
		Title: "unknown request fields answer INVALID_INPUT naming the field"},
	{ID: "err.input.bad-values", Area: AreaErrors, Profiles: core, run: errBadValues,
		Title: "an unknown power action and an out-of-range list limit answer INVALID_INPUT"},
	{ID: "err.config.invalid", Area: AreaErrors, Profiles: core, run: errConfigInvalid,
		Title: "an account config with an unknown or missing field answers INVALID_CONFIG with the path"},
	{ID: "err.config.plain-secret", Area: AreaErrors, Profiles: core, run: errPlainSecret,
		Title: "a plain value in a secret field answers INVALID_INPUT without echoing it"},

	{ID: "fault.rate-limited", Area: AreaFaults, Profiles: faults, needs: needFaults, run: faultRateLimited,
		Title: "an API 429 with a reset answers RATE_LIMITED with retryAfterMs to the reset, and no extra API calls"},
	{ID: "fault.server-error-converges", Area: AreaFaults, Profiles: faults, needs: needFaults | needInventory, run: faultServerError,
		Title: "an API 5xx on create answers a retryable error; a retry converges to exactly one machine"},
	{ID: "fault.dropped-response-converges", Area: AreaFaults, Profiles: faults, needs: needFaults | needInventory, run: faultDropped,
		Title: "a create whose API response is lost answers a retryable error; a retry returns that machine, exactly one"},
	{ID: "fault.action-failed", Area: AreaFaults, Profiles: faults, Capability: provider.CapabilityPower, needs: needFaults,
		run: faultActionFailed, Title: "a failed provider action answers PROVIDER_ERROR"},
	{ID: "fault.hung-call-deadline", Area: AreaFaults, Profiles: faults, needs: needFaults, run: faultHung,
		Title: "a hung API call is answered, with a retryable error, by the caller's deadline; the provider keeps serving"},

	{ID: "durable.kill-after-accept", Area: AreaDurable, Profiles: durable, needs: needFaults | needInventory | needService, run: durableKill,
		Title: "killed after the API accepted a create and before the reply, the restarted provider returns that machine, no second one"},

	{ID: "transport.no-responders", Area: AreaTransport, Profiles: transport, needs: needService, run: transportNoResponders,
		Title: "with the provider service down, calls answer UNAVAILABLE before their deadline; after restart they succeed"},
	{ID: "transport.late-reply", Area: AreaTransport, Profiles: transport, needs: needFaults, run: transportLateReply,
		Title: "a reply after the caller's timeout is UNAVAILABLE to it and never answers a later call"},
	{ID: "transport.duplicate-request", Area: AreaTransport, Profiles: transport, run: transportDuplicate,
		Title: "a create request delivered twice answers the same machine twice and makes one"},
	{ID: "transport.list-paging", Area: AreaTransport, Profiles: transport, Capability: provider.CapabilityList, needs: needInventory,
		run: transportListPaging, Title: "listing more than the NATS max payload keeps every reply under it and misses nothing"},
	{ID: "transport.reconnect", Area: AreaTransport, Profiles: transport, run: transportReconnect,
		Title: "after the bus connections reconnect, calls succeed again"},

	{ID: "secrets.replies", Area: AreaSecrets, Profiles: secrets, needs: needSecretValues, run: secretsReplies,
		Title: "no secret value appears in any reply or error of the run"},
	{ID: "secrets.logs", Area: AreaSecrets, Profiles: secrets, needs: needSecretValues | needLogs, run: secretsLogs,
		Title: "no secret value appears in any log line captured during the run"},
	{ID: "secrets.reports", Area: AreaSecrets, Profiles: secrets, needs: needSecretValues, run: secretsReports,
		Title: "no secret value appears in report.json or junit.xml"},

	{ID: "scale.list-complete", Area: AreaScale, Profiles: scale, Capability: provider.CapabilityList, needs: needInventory,
		run: scaleListComplete, Title: "an inventory of many managed machines is listed completely across pages"},
	{ID: "scale.latency", Area: AreaScale, Profiles: scale, needs: needInventory, run: scaleLatency,
		Title: "p99 latencies of get, create-ack and list under concurrent load (measured and reported)"},

	{ID: "life.key.reported", Area: AreaLifecycle, Profiles: core, run: lifeKeyReported,
		Title: "create and get report the idempotency key a machine carries; get expecting another key answers absent"},
	{ID: "life.delete.by-key", Area: AreaLifecycle, Profiles: core, Capability: provider.CapabilityDeleteByKey, run: lifeDeleteByKey,
		Title: "delete with an idempotency key and no id deletes the machine created with that key, " +
			"then answers NOT_FOUND, as for an unknown key"},
	{ID: "err.refusal.permanent", Area: AreaErrors, Profiles: core, run: errRefusalPermanent,
		Title: "a create naming an offer that does not exist is refused as permanent " +
			"(a terminal code or details.permanent), and makes no machine"},
	{ID: "offers.capacity-type", Area: AreaOffers, Profiles: spot, Capability: provider.CapabilitySpot, run: offersCapacityType,
		Title: "every offer declares a capacity type, on-demand or spot, and at least one is spot"},
	{ID: "offers.spot-interruption", Area: AreaOffers, Profiles: spot, Capability: provider.CapabilitySpot, run: offersSpotInterruption,
		Title: "every spot offer's interruptionProbability is in (0,1]"},
	{ID: "offers.on-demand-uninterrupted", Area: AreaOffers, Profiles: spot, Capability: provider.CapabilitySpot,
		run:   offersOnDemandUninterrupted,
		Title: "every on-demand offer's interruptionProbability is 0"},
	{ID: "ssh.configure", Area: AreaSSH, Profiles: sshProfile, Capability: provider.CapabilitySSH, needs: needSSH, run: sshConfigure,
		Title: "a running machine answers SSH at the address get reports and runs a configure step told its id and generation: " +
			"exit status and output as the step wrote them"},
	{ID: "ssh.drain", Area: AreaSSH, Profiles: sshProfile, Capability: provider.CapabilitySSH, needs: needSSH, run: sshDrain,
		Title: "a drain step runs over SSH right before the delete (a failing one reports its exit status); " +
			"once the machine is gone its address answers SSH no more"},
	{ID: "ssh.host-key-pinning", Area: AreaSSH, Profiles: sshProfile, Capability: provider.CapabilitySSH, needs: needSSH,
		run: sshHostKeyPinning, Title: "a machine presents one host key across connections and gets; " +
			"after it changes, a connection pinned to the first is refused and runs nothing"},
	{ID: "labels.create.propagated", Area: AreaLabels, Profiles: labelsProfile, Capability: provider.CapabilityLabels,
		run: labelsAtCreate, Title: "labels given at create are on the machine: get reports exactly them, no system label among them"},
	{ID: "labels.list.reported", Area: AreaLabels, Profiles: labelsProfile, Capability: provider.CapabilityLabels,
		run: labelsListed, Title: "list reports each machine's labels as get does"},
	{ID: "labels.relabel.replaces", Area: AreaLabels, Profiles: labelsProfile, Capability: provider.CapabilityLabels,
		run: labelsRelabel, Title: "relabel replaces the labels whole (also with none) and get agrees; " +
			"the machine keeps its idempotency key, so a create retried with it answers the same machine"},
	{ID: "labels.relabel.refusals", Area: AreaLabels, Profiles: labelsProfile, Capability: provider.CapabilityLabels,
		run: labelsRelabelRefusals, Title: "relabel refuses an invalid label and a system key (INVALID_INPUT at labels[<key>]); " +
			"a missing machine is NOT_FOUND"},
	{ID: "labels.list.not-selected", Area: AreaLabels, Profiles: labelsProfile, Capability: provider.CapabilityLabels,
		run: labelsNotSelected, Title: "selecting by labels is the control plane's: list answers every managed machine whatever its labels"},
	{ID: "net.vlan.applied", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityNetworkVLAN, needs: needNodeNetwork,
		run: netVLANApplied, Title: "a machine created with a pool network's bridge and VLAN tag is attached to that bridge with that tag"},
	{ID: "net.static.applied", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityStaticIPv4, needs: needNodeNetwork,
		run: netStaticApplied, Title: "a machine created with a static address from the pool's range carries it " +
			"(in the backend and first in the addresses get reports), not a DHCP lease"},
	{ID: "net.static.never-reused", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityStaticIPv4, needs: needNodeNetwork,
		run: netStaticNeverReused, Title: "machines created at once with distinct static addresses each carry their own: " +
			"no address is given to a second machine while the first holds it"},
	{ID: "net.placement.full-node-skipped", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityPlacementNodes,
		needs: needNodeNetwork, run: netFullNodeSkipped, Title: "with one allowed node full a machine lands on another allowed node; " +
			"with every allowed node full create answers CAPACITY_UNAVAILABLE and makes nothing"},
	{ID: "resize.moves-offer", Area: AreaResize, Profiles: core, Capability: provider.CapabilityResize, run: resizeMovesOffer,
		Title: "a running machine resized to another offer keeps its id, reports the new offer (reply and get) and runs again"},
	{ID: "resize.same-offer-unchanged", Area: AreaResize, Profiles: core, Capability: provider.CapabilityResize, run: resizeSameOffer,
		Title: "a resize to the offer the machine is on answers changed false and leaves it running on that offer"},
	{ID: "resize.refusals", Area: AreaResize, Profiles: core, Capability: provider.CapabilityResize, run: resizeRefusals,
		Title: "a resize to an unknown offer is INVALID_INPUT naming offerId and changes nothing; " +
			"a resize of a deleted machine is NOT_FOUND"},
	{ID: "metrics.series", Area: AreaMetrics, Profiles: core, Capability: provider.CapabilityMetrics, run: metricsSeries,
		Title: "cpu metrics of a running machine's last hour: the type asked for, a positive step, " +
			"series sorted by name with a unit, points ascending within the window it answers (spanning the hour)"},
	{ID: "metrics.window-refused", Area: AreaMetrics, Profiles: core, Capability: provider.CapabilityMetrics,
		run:   metricsWindowRefused,
		Title: "metrics with an unknown type, from after to or a negative step are INVALID_INPUT naming the field"},
	{ID: "net.public-ipv4-off", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityNetworkPublicIP, needs: needNetwork,
		run: netNoPublicIPv4, Title: "a machine whose pool turns public IPv4 off has none in the backend and reports none"},
	{ID: "net.private-network", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityNetworkPrivate, needs: needNetwork,
		run: netPrivateNetwork, Title: "a machine of a pool with a private network has an address in it and reports it"},
	{ID: "net.firewall-applied", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityNetworkFirewalls, needs: needNetwork,
		run: netFirewallApplied, Title: "the pool's firewalls are applied to its machine at create"},
	{ID: "net.spread-chunks", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityPlacementSpread, needs: needNetwork,
		run: netSpreadChunks, Title: "11 concurrent creates of one spread pool land in 2 placement groups of at most 10"},
	{ID: "net.location-fallback", Area: AreaNetwork, Profiles: network, Capability: provider.CapabilityPlacementLocations, needs: needNetwork,
		run: netLocationFallback, Title: "with the pool's first location out of capacity, one machine is made in the second and notes why"},
	{ID: "metal.claim.exclusive", Area: AreaMetal, Profiles: metal, run: metalClaimExclusive,
		Title: "a claimed machine named as the offer of a create under another key is refused ACCESS_DENIED (permanent) " +
			"and stays the first claim's"},
	{ID: "metal.release.frees", Area: AreaMetal, Profiles: metal, run: metalReleaseFrees,
		Title: "a claimed machine is not offered; deleted (released), it is offered again by its id"},
}

// Profile sets of the table above.
var (
	core      = []string{ProfileCore}
	cloud     = []string{ProfileCloud}
	faults    = []string{ProfileFaults}
	durable   = []string{ProfileDurable}
	transport = []string{ProfileTransport}
	secrets   = []string{ProfileSecrets}
	scale     = []string{ProfileScale}
	spot      = []string{ProfileSpot}
	// sshProfile is named apart from the package ssh.
	sshProfile = []string{ProfileSSH}
	// labelsProfile is named apart from the labels of a machine.
	labelsProfile = []string{ProfileLabels}
	network       = []string{ProfileNetwork}
	metal         = []string{ProfileMetal}
)

// Registry returns a copy of the behaviour registry, in registry order.
func Registry() []Behaviour { return slices.Clone(registry) }

// RegistryIDs returns the ids of the registry, in order.
func RegistryIDs() []string {
	ids := make([]string, len(registry))
	for i, b := range registry {
		ids[i] = b.ID
	}
	return ids
}

// canonical is the canonical text of behaviours: one line per behaviour,
// in order, "id area profiles capability" (profiles joined by commas,
// capability "-" when none).
func canonical(bs []Behaviour) string {
	var b strings.Builder
	for _, x := range bs {
		capability := x.Capability
		if capability == "" {
			capability = "-"
		}
		b.WriteString(x.ID + " " + x.Area + " " + strings.Join(x.Profiles, ",") + " " + capability + "\n")
	}
	return b.String()
}

// RegistryHash is the hex SHA-256 of the canonical registry (one line per
// behaviour, in order: "id area profiles capability", as in
// testdata/registry.golden). Reports carry it so
// two reports can be compared.
func RegistryHash() string {
	sum := sha256.Sum256([]byte(canonical(registry)))
	return hex.EncodeToString(sum[:])
}

// SuiteVersion is the version of the conformance program reported with
// every run; it changes when a behaviour's checks change.
const SuiteVersion = "1.5.0"
