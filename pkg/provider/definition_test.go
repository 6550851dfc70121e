package provider_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

func i64(n int64) *int64 { return &n }

// validDefinition passes Define; each refusal case breaks one part of it.
func validDefinition() provider.Definition {
	return provider.Definition{
		ID: "tiny-2", Version: "1.2.3-rc.1+build.5", Provides: []string{api.KindVPS, api.KindMetal},
		Capabilities: []string{provider.CapabilityPower, provider.CapabilityList},
		Manifest: []api.ManifestField{
			{Name: "token", Type: provider.TypeSecret, Required: true},
			{Name: "region", Type: provider.TypeOption, Options: []string{"fsn1", "nbg1"}, Default: "fsn1"},
			{Name: "count", Type: provider.TypeInt, Min: i64(1), Max: i64(5), Default: 2},
			{Name: "zones", Type: provider.TypeList, Item: &api.ManifestField{Type: provider.TypeString}},
			{Name: "sizes", Type: provider.TypeList, Item: &api.ManifestField{Type: provider.TypeObject, Fields: []api.ManifestField{
				{Name: "vcpu", Type: provider.TypeInt},
			}}},
			{Name: "net", Type: provider.TypeObject, Fields: []api.ManifestField{{Name: "name", Type: provider.TypeString}}},
			{Name: "debug", Type: provider.TypeBool, Default: false},
		},
		New: func(provider.BuildContext) (provider.Client, error) { return nil, nil },
	}
}

func TestDefineAccepts(t *testing.T) {
	d := validDefinition()
	got, err := provider.Define(d)
	if err != nil {
		t.Fatalf("Define: %v", err)
	}
	if got.ID() != d.ID || got.Version() != d.Version || !reflect.DeepEqual(got.Manifest(), d.Manifest) {
		t.Fatalf("Define returned %+v", got)
	}
	if !got.Has(provider.CapabilityPower) || got.Has(provider.CapabilityReinstall) {
		t.Fatal("Has does not follow the capabilities")
	}
	desc := got.Describe()
	if desc.ID != d.ID || desc.Version != d.Version || !reflect.DeepEqual(desc.Provides, d.Provides) ||
		!reflect.DeepEqual(desc.Capabilities, d.Capabilities) || !reflect.DeepEqual(desc.Manifest, d.Manifest) ||
		string(desc.ConfigSchema) != string(provider.ConfigSchema(d.Manifest)) {
		t.Fatalf("Describe = %+v", desc)
	}
}

func TestMustDefine(t *testing.T) {
	d := validDefinition()
	if got := provider.MustDefine(d); got.ID() != d.ID || got.Version() != d.Version {
		t.Fatalf("MustDefine returned %+v", got)
	}
	d.Version = "one"
	defer func() {
		if p, _ := recover().(string); !strings.HasPrefix(p, "tiny-2: invalid provider definition: ") || !strings.Contains(p, "semantic version") {
			t.Fatalf("panic = %q, want one naming the provider and the refusal", p)
		}
	}()
	provider.MustDefine(d)
	t.Fatal("MustDefine accepted an invalid definition")
}

func TestDefineRefusals(t *testing.T) {
	plainMsg := "default does not fit the field: manifest.apiKey.default must be a secret reference " +
		"(secret://<tenant>/<id>, env://NAME or vault://<mount>/<path>#<field>), not a plain value: store it with secrets.put first"
	field := func(f api.ManifestField) func(*provider.Definition) {
		return func(d *provider.Definition) { d.Manifest = append(d.Manifest, f) }
	}
	tests := []struct {
		name    string
		change  func(*provider.Definition)
		path    string
		message string
	}{
		{"empty id", func(d *provider.Definition) { d.ID = "" }, "id",
			`provider id "" must be lower-case letters, digits and hyphens, starting with a letter`},
		{"upper-case id", func(d *provider.Definition) { d.ID = "Tiny" }, "id",
			`provider id "Tiny" must be lower-case letters, digits and hyphens, starting with a letter`},
		{"id starting with a digit", func(d *provider.Definition) { d.ID = "1tiny" }, "id",
			`provider id "1tiny" must be lower-case letters, digits and hyphens, starting with a letter`},
		{"id with a dot", func(d *provider.Definition) { d.ID = "ti.ny" }, "id",
			`provider id "ti.ny" must be lower-case letters, digits and hyphens, starting with a letter`},
		{"id too long", func(d *provider.Definition) { d.ID = strings.Repeat("a", 64) }, "id",
			`provider id "` + strings.Repeat("a", 64) + `" must be lower-case letters, digits and hyphens, starting with a letter`},
		{"two-part version", func(d *provider.Definition) { d.Version = "1.2" }, "version",
			`provider version "1.2" is not a semantic version`},
		{"v-prefixed version", func(d *provider.Definition) { d.Version = "v1.2.3" }, "version",
			`provider version "v1.2.3" is not a semantic version`},
		{"leading zero version", func(d *provider.Definition) { d.Version = "01.2.3" }, "version",
			`provider version "01.2.3" is not a semantic version`},
		{"empty provides", func(d *provider.Definition) { d.Provides = nil }, "provides",
			"a provider must provide at least one of [vps metal]"},
		{"unknown provides", func(d *provider.Definition) { d.Provides = []string{"vps", "gpu"} }, "provides[1]",
			`"gpu" is not one of [vps metal]`},
		{"duplicate provides", func(d *provider.Definition) { d.Provides = []string{"vps", "vps"} }, "provides[1]",
			`"vps" is listed twice`},
		{"duplicate capability", func(d *provider.Definition) { d.Capabilities = []string{"power", "list", "power"} }, "capabilities[2]",
			`"power" is listed twice`},
		{"unknown capability", func(d *provider.Definition) { d.Capabilities = []string{"power", "snapshot"} }, "capabilities[1]",
			`"snapshot" is not one of [power reinstall list delete.byKey labels resize metrics spot ssh network.private network.firewalls network.publicIP placement.spread placement.locations network.vlan network.staticIPv4 placement.nodes]`},
		{"nil constructor", func(d *provider.Definition) { d.New = nil }, "new", "a provider needs a constructor"},
		{"field name with a hyphen", field(api.ManifestField{Name: "api-key", Type: provider.TypeString}), "manifest.api-key",
			`field name "api-key" must be letters, digits and _, starting with a letter`},
		{"field name starting with a digit", field(api.ManifestField{Name: "1x", Type: provider.TypeString}), "manifest.1x",
			`field name "1x" must be letters, digits and _, starting with a letter`},
		{"empty field name", field(api.ManifestField{Type: provider.TypeString}), "manifest.",
			`field name "" must be letters, digits and _, starting with a letter`},
		{"duplicate field", field(api.ManifestField{Name: "region", Type: provider.TypeString}), "manifest.region",
			`field "region" is declared twice`},
		{"unknown type", field(api.ManifestField{Name: "ratio", Type: "float"}), "manifest.ratio.type",
			`unknown field type "float"`},
		{"option without options", field(api.ManifestField{Name: "size", Type: provider.TypeOption}), "manifest.size.options",
			"an option field needs options"},
		{"list without item", field(api.ManifestField{Name: "ips", Type: provider.TypeList}), "manifest.ips.item",
			"a list field needs an item type"},
		{"list item of unknown type", field(api.ManifestField{Name: "ips", Type: provider.TypeList, Item: &api.ManifestField{Type: "ip"}}),
			"manifest.ips.item.type", `unknown field type "ip"`},
		{"object without fields", field(api.ManifestField{Name: "opts", Type: provider.TypeObject}), "manifest.opts.fields",
			"an object field needs fields"},
		{"nested duplicate field", field(api.ManifestField{Name: "opts", Type: provider.TypeObject, Fields: []api.ManifestField{
			{Name: "a", Type: provider.TypeBool}, {Name: "a", Type: provider.TypeInt}}}), "manifest.opts.a", `field "a" is declared twice`},
		{"bad field name in a list of objects", field(api.ManifestField{Name: "disks", Type: provider.TypeList, Item: &api.ManifestField{
			Type: provider.TypeObject, Fields: []api.ManifestField{{Name: "size gb", Type: provider.TypeInt}}}}),
			"manifest.disks.item.size gb", `field name "size gb" must be letters, digits and _, starting with a letter`},
		{"secret with default", field(api.ManifestField{Name: "key2", Type: provider.TypeSecret, Default: "env://X"}), "manifest.key2.default",
			"a secret field cannot have a default"},
		{"int default of wrong type", field(api.ManifestField{Name: "n", Type: provider.TypeInt, Default: "5"}), "manifest.n.default",
			"default does not fit the field: manifest.n.default must be an integer, not a string"},
		{"int default with a fraction", field(api.ManifestField{Name: "n", Type: provider.TypeInt, Default: 2.5}), "manifest.n.default",
			"default does not fit the field: manifest.n.default must be an integer, not a number"},
		{"int default out of range", field(api.ManifestField{Name: "n", Type: provider.TypeInt, Min: i64(1), Max: i64(3), Default: 4}),
			"manifest.n.default", "default does not fit the field: manifest.n.default must be within [1, 3]"},
		{"bool default of wrong type", field(api.ManifestField{Name: "b", Type: provider.TypeBool, Default: "true"}), "manifest.b.default",
			"default does not fit the field: manifest.b.default must be a boolean, not a string"},
		{"option default not offered", field(api.ManifestField{Name: "size", Type: provider.TypeOption, Options: []string{"s", "m"}, Default: "l"}),
			"manifest.size.default", "default does not fit the field: manifest.size.default must be one of [s m]"},
		{"plain default in a secret-named string", field(api.ManifestField{Name: "apiKey", Type: provider.TypeString, Default: "abc"}),
			"manifest.apiKey.default", plainMsg},
		{"min above max", field(api.ManifestField{Name: "n", Type: provider.TypeInt, Min: i64(5), Max: i64(1)}), "manifest.n.min",
			"min 5 is above max 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := validDefinition()
			tc.change(&d)
			got, err := provider.Define(d)
			want := api.InvalidConfig(tc.path, "%s", tc.message)
			if got != nil || !reflect.DeepEqual(api.AsComputeError(err), want) {
				t.Fatalf("Define = %v, %#v; want %#v", got, err, want)
			}
		})
	}
}

// TestDefinitionFrozen: Define keeps its own copy of the definition, so
// neither changing what was passed to it nor changing what its accessors
// or Describe returned changes what describe answers; describe answers
// extension "provider".
func TestDefinitionFrozen(t *testing.T) {
	d := validDefinition()
	got, err := provider.Define(d)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(got.Describe())
	if err != nil {
		t.Fatal(err)
	}
	d.ID, d.Provides[0], d.Capabilities[0] = "other", api.KindMetal, provider.CapabilityReinstall
	d.Manifest[0].Name, d.Manifest[1].Options[0], *d.Manifest[2].Min = "changed", "hel1", 3
	d.Manifest[4].Item.Fields[0].Name, d.Manifest[5].Fields[0].Type = "ram", provider.TypeInt
	d.New = nil
	got.Provides()[0], got.Capabilities()[0] = "gpu", "snapshot"
	m := got.Manifest()
	m[1].Options[1], *m[2].Max, m[4].Item.Fields[0].Name, m[6].Default = "x", 9, "disk", true
	desc := got.Describe()
	desc.Provides[0], desc.Capabilities[1], desc.Manifest[1].Options[0], *desc.Manifest[2].Min = "x", "y", "z", 4
	desc.Manifest[4].Item.Fields[0].Name = "mem"
	after, err := json.Marshal(got.Describe())
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(want) {
		t.Fatalf("describe changed after the mutations:\n got %s\nwant %s", after, want)
	}
	if got.ID() != "tiny-2" || !got.Has(provider.CapabilityPower) {
		t.Fatalf("accessors changed: id %q, power %v", got.ID(), got.Has(provider.CapabilityPower))
	}
	if desc := got.Describe(); desc.Extension != provider.Extension || provider.Extension != "provider" {
		t.Fatalf("describe extension = %q, want %q", desc.Extension, "provider")
	}
	if c, err := got.New(provider.BuildContext{}); c != nil || err != nil {
		t.Fatalf("the constructor changed: %v, %v", c, err)
	}
}
