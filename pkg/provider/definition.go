package provider

import (
	"fmt"
	"regexp"
	"slices"

	"better-compute.io/compute/pkg/api"
)

// Capabilities a provider may claim; each matches an optional interface.
const (
	CapabilityPower     = "power"
	CapabilityReinstall = "reinstall"
	CapabilityList      = "list"
	// CapabilityDeleteByKey is delete with an idempotency key and no id:
	// every machine carrying the key, finished or half-made, is deleted
	// (KeyDeleter). Without it a caller has no way to find a half-made
	// machine but a create of the key.
	CapabilityDeleteByKey = "delete.byKey"
	// CapabilitySpot is offering spot capacity: some offers are
	// api.CapacitySpot with an interruptionProbability in (0,1]. It needs
	// no interface; a provider without spot capacity (Hetzner Cloud,
	// Proxmox) claims it not, and the conformance spot profile skips.
	CapabilitySpot = "spot"
	// CapabilitySSH is machines reachable over SSH: a running machine
	// answers SSH at the address the provider reports (its
	// ExternalMachine.SSHEndpoint, else its first address) for the
	// platform's key, with a host key of its own that stays the same until
	// it is re-made or reinstalled (pkg/access). It needs no interface;
	// the conformance ssh profile checks it.
	CapabilitySSH = "ssh"
	// CapabilityLabels is machines carrying the instance's labels: create
	// puts MachineSpec.Labels on the machine beside the provider's own
	// system labels (never replacing them), get and list report them back
	// (ExternalMachine.Labels, system labels left out; a provider whose
	// label form is lossy reports what it can parse back), and relabel
	// replaces them (Relabeler).
	CapabilityLabels = "labels"
	// CapabilityNetworkVLAN is a pool's network.bridge and network.vlan
	// applied to every machine's first NIC (Proxmox VE net0 bridge= and
	// tag=). It needs no interface; the conformance vlan behaviour
	// checks it.
	CapabilityNetworkVLAN = "network.vlan"
	// CapabilityStaticIPv4 is the machine spec's address (allocated by
	// the control plane from the pool's network.addresses) configured on
	// the machine instead of DHCP (Proxmox VE cloud-init ipconfig0 and
	// nameserver). It needs no interface.
	CapabilityStaticIPv4 = "network.staticIPv4"
	// CapabilityPlacementNodes is a pool's placement.nodes honoured: a
	// machine lands on the allowed node with the most headroom that can
	// hold it, a full node is skipped, and offers are available only
	// when some allowed node can hold them. It needs no interface.
	CapabilityPlacementNodes = "placement.nodes"
	// CapabilityResize is moving a machine to another offer in place
	// (Resizer): same id, same disk contents.
	CapabilityResize = "resize"
	// CapabilityMetrics is answering usage metrics of a machine
	// (MetricsReader).
	CapabilityMetrics = "metrics"
)

// CallCapabilities are the capabilities that add calls (an optional
// interface each): a provider not claiming one answers its calls
// UNSUPPORTED.
var CallCapabilities = []string{CapabilityPower, CapabilityReinstall, CapabilityList, CapabilityDeleteByKey, CapabilityLabels,
	CapabilityResize, CapabilityMetrics}

// Capabilities lists every capability: the CallCapabilities, spot (a
// claim about offers), ssh (a claim about machines)
// and the PoolCapabilities (claims about create's pool fields).
var Capabilities = append(append(slices.Clone(CallCapabilities), CapabilitySpot, CapabilitySSH), PoolCapabilities...)

// Provides lists what a provider may provide.
var Provides = []string{api.KindVPS, api.KindMetal}

// BuildContext is what a constructor gets: the account (config already
// validated, defaults applied, secrets still references).
type BuildContext struct {
	Account api.ProviderAccount
}

// Extension is what describe answers as extension: the kind of Better
// Compute extension every provider is.
const Extension = "provider"

// Definition describes a provider: its id (lower-case letters, digits,
// hyphens), semantic version, what it provides (vps, metal), its account
// config manifest, its capabilities (power, reinstall, list, delete.byKey,
// spot) and a
// constructor building a Client for one account. It is what Define is
// given; what it returns, and Serve serves, is a Defined.
type Definition struct {
	ID           string
	Version      string
	Provides     []string
	Manifest     []api.ManifestField
	Capabilities []string
	New          func(bc BuildContext) (Client, error)
}

var (
	providerIDPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
	semverPattern     = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	fieldNamePattern  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,63}$`)
)

// Defined is a definition Define accepted, frozen: it holds its own deep
// copy of the Definition, and its accessors return copies, so nothing a
// caller holds (what it gave Define, what an accessor or Describe
// returned) can change what Serve answers.
type Defined struct {
	d Definition
}

// Define validates d and returns a frozen copy of it. Errors:
// INVALID_CONFIG with details.path naming the first offending part ("id",
// "version", "provides[1]", "manifest.sizes.item.vcpu", "capabilities[0]",
// "new").
func Define(d Definition) (*Defined, error) {
	switch {
	case !providerIDPattern.MatchString(d.ID):
		return nil, api.InvalidConfig("id", "provider id %q must be lower-case letters, digits and hyphens, starting with a letter", d.ID)
	case !semverPattern.MatchString(d.Version):
		return nil, api.InvalidConfig("version", "provider version %q is not a semantic version", d.Version)
	case len(d.Provides) == 0:
		return nil, api.InvalidConfig("provides", "a provider must provide at least one of %v", Provides)
	case d.New == nil:
		return nil, api.InvalidConfig("new", "a provider needs a constructor")
	}
	if err := checkSet("provides", d.Provides, Provides); err != nil {
		return nil, err
	}
	if err := checkSet("capabilities", d.Capabilities, Capabilities); err != nil {
		return nil, err
	}
	if err := checkFields("manifest", d.Manifest); err != nil {
		return nil, err
	}
	return &Defined{d: cloneDefinition(d)}, nil
}

// MustDefine is Define for a definition made of constants, as a provider's
// Definition function builds it: it panics (naming d.ID and Define's
// INVALID_CONFIG error) when Define refuses d, which is a bug of the caller
// that any test calling that function catches.
func MustDefine(d Definition) *Defined {
	out, err := Define(d)
	if err != nil {
		panic(fmt.Sprintf("%s: invalid provider definition: %v", d.ID, err))
	}
	return out
}

// ID is the provider's id.
func (d *Defined) ID() string { return d.d.ID }

// Version is the provider's semantic version.
func (d *Defined) Version() string { return d.d.Version }

// Provides is a copy of what the provider provides.
func (d *Defined) Provides() []string { return slices.Clone(d.d.Provides) }

// Capabilities is a copy of the capabilities the provider claims.
func (d *Defined) Capabilities() []string { return slices.Clone(d.d.Capabilities) }

// Manifest is a deep copy of the account config manifest.
func (d *Defined) Manifest() []api.ManifestField { return cloneFields(d.d.Manifest) }

// New builds a client for one account with the definition's constructor.
func (d *Defined) New(bc BuildContext) (Client, error) { return d.d.New(bc) }

// Definition is a deep copy of the definition, to derive another from
// (e.g. one whose constructor wraps this one's) and give it to Define.
func (d *Defined) Definition() Definition { return cloneDefinition(d.d) }

// Has reports whether d claims capability c.
func (d *Defined) Has(c string) bool { return slices.Contains(d.d.Capabilities, c) }

// Describe is d without its code, as the describe subject answers it:
// extension Extension, and copies of everything else.
func (d *Defined) Describe() api.ProviderDescription {
	return api.ProviderDescription{Extension: Extension, ID: d.d.ID, Version: d.d.Version, Provides: d.Provides(),
		Capabilities: d.Capabilities(), Manifest: d.Manifest(), ConfigSchema: ConfigSchema(d.d.Manifest)}
}

// cloneDefinition is a deep copy of d (the constructor is shared).
func cloneDefinition(d Definition) Definition {
	d.Provides, d.Capabilities, d.Manifest = slices.Clone(d.Provides), slices.Clone(d.Capabilities), cloneFields(d.Manifest)
	return d
}

// cloneFields is a deep copy of fields (nil stays nil).
func cloneFields(fields []api.ManifestField) []api.ManifestField {
	if fields == nil {
		return nil
	}
	out := make([]api.ManifestField, len(fields))
	for i, f := range fields {
		out[i] = cloneField(f)
	}
	return out
}

// cloneField is a deep copy of f: its options, bounds, members, item and
// default.
func cloneField(f api.ManifestField) api.ManifestField {
	f.Options, f.Fields, f.Default = slices.Clone(f.Options), cloneFields(f.Fields), cloneValue(f.Default)
	f.Min, f.Max = clonePtr(f.Min), clonePtr(f.Max)
	if f.Item != nil {
		item := cloneField(*f.Item)
		f.Item = &item
	}
	return f
}

// clonePtr is a pointer to a copy of *p (nil stays nil).
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneValue is a deep copy of a JSON-like value: lists ([]any, []string)
// and objects (map[string]any) are copied, scalars returned as they are.
func cloneValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case []string:
		return slices.Clone(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	}
	return v
}

// checkClient verifies that a built client implements every claimed
// capability's interface (INVALID_CONFIG naming the capability otherwise).
func (d *Defined) checkClient(c Client) error {
	for i, capability := range d.d.Capabilities {
		ok := true
		switch capability {
		case CapabilityPower:
			_, ok = c.(Powerer)
		case CapabilityReinstall:
			_, ok = c.(Reinstaller)
		case CapabilityList:
			_, ok = c.(Lister)
		case CapabilityDeleteByKey:
			_, ok = c.(KeyDeleter)
		case CapabilityLabels:
			_, ok = c.(Relabeler)
		case CapabilityResize:
			_, ok = c.(Resizer)
		case CapabilityMetrics:
			_, ok = c.(MetricsReader)
		}
		if !ok {
			return api.InvalidConfig(fmt.Sprintf("capabilities[%d]", i), "provider %s claims %q but its client does not implement it",
				d.d.ID, capability)
		}
	}
	return nil
}

func checkSet(path string, values, allowed []string) error {
	for i, v := range values {
		p := fmt.Sprintf("%s[%d]", path, i)
		if !slices.Contains(allowed, v) {
			return api.InvalidConfig(p, "%q is not one of %v", v, allowed)
		}
		if slices.Index(values, v) != i {
			return api.InvalidConfig(p, "%q is listed twice", v)
		}
	}
	return nil
}

// Manifest field types.
const (
	TypeString = "string"
	TypeSecret = "secret"
	TypeOption = "option"
	TypeInt    = "int"
	TypeBool   = "bool"
	TypeList   = "list"
	TypeObject = "object"
)

func checkFields(path string, fields []api.ManifestField) error {
	seen := map[string]bool{}
	for _, f := range fields {
		p := path + "." + f.Name
		if !fieldNamePattern.MatchString(f.Name) {
			return api.InvalidConfig(p, "field name %q must be letters, digits and _, starting with a letter", f.Name)
		}
		if seen[f.Name] {
			return api.InvalidConfig(p, "field %q is declared twice", f.Name)
		}
		seen[f.Name] = true
		if err := checkField(p, f); err != nil {
			return err
		}
	}
	return nil
}

func checkField(p string, f api.ManifestField) error {
	switch f.Type {
	case TypeString, TypeBool:
	case TypeSecret:
		if f.Default != nil {
			return api.InvalidConfig(p+".default", "a secret field cannot have a default")
		}
	case TypeOption:
		if len(f.Options) == 0 {
			return api.InvalidConfig(p+".options", "an option field needs options")
		}
	case TypeInt:
		if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
			return api.InvalidConfig(p+".min", "min %d is above max %d", *f.Min, *f.Max)
		}
	case TypeList:
		if f.Item == nil {
			return api.InvalidConfig(p+".item", "a list field needs an item type")
		}
		if err := checkField(p+".item", itemField(f)); err != nil {
			return err
		}
	case TypeObject:
		if len(f.Fields) == 0 {
			return api.InvalidConfig(p+".fields", "an object field needs fields")
		}
		if err := checkFields(p, f.Fields); err != nil {
			return err
		}
	default:
		return api.InvalidConfig(p+".type", "unknown field type %q", f.Type)
	}
	if f.Default != nil {
		if _, err := validateValue(p+".default", f, f.Default); err != nil {
			return api.InvalidConfig(p+".default", "default does not fit the field: %s", api.AsComputeError(err).Message)
		}
	}
	return nil
}
