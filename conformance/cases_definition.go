package conformance

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// schemaDraft is the JSON Schema dialect config schemas must declare.
const schemaDraft = "https://json-schema.org/draft/2020-12/schema"

// defDescribe: describe answers a well-typed definition that provider.Define
// accepts, under the subject's provider id.
func defDescribe(c *check) {
	raw, err := c.raw(provider.VerbDescribe, api.Empty{})
	if err != nil {
		c.Fatalf("describe: %v", err)
	}
	var d api.ProviderDescription
	if err := bus.Decode(raw, &d); err != nil {
		c.Fatalf("describe reply is not a well-typed description: %v", err)
	}
	if d.Extension != provider.Extension {
		c.Errorf("describe answers extension %q, want %q", d.Extension, provider.Extension)
	}
	if d.ID != c.r.s.ProviderID {
		c.Errorf("describe answers id %q on the subjects of provider %q", d.ID, c.r.s.ProviderID)
	}
	if _, err := provider.Define(definitionOf(&d)); err != nil {
		c.Errorf("the described definition is invalid: %v (path %s)", err, api.AsComputeError(err).Path())
	}
	if len(d.ConfigSchema) == 0 {
		c.Errorf("describe has no configSchema")
	}
	c.Logf("provider %s %s provides %v, claims %v, %d config fields", d.ID, d.Version, d.Provides, d.Capabilities, len(d.Manifest))
}

// definitionOf is a described definition with a constructor that builds
// nothing, for provider.Define.
func definitionOf(d *api.ProviderDescription) provider.Definition {
	return provider.Definition{
		ID: d.ID, Version: d.Version, Provides: slices.Clone(d.Provides),
		Manifest: slices.Clone(d.Manifest), Capabilities: slices.Clone(d.Capabilities),
		New: func(provider.BuildContext) (provider.Client, error) {
			return nil, api.Errorf(api.CodeUnsupported, "conformance definitions build no client")
		},
	}
}

// defConfigSchema: the config schema compiles (draft 2020-12), accepts the
// subject's config, and refuses an unknown field and each missing
// required field, as the manifest does.
func defConfigSchema(c *check) {
	d := c.r.desc
	sch, err := compileSchema(d.ConfigSchema)
	if err != nil {
		c.Fatalf("configSchema does not compile: %v", err)
	}
	valid := func(cfg map[string]any) error {
		data, err := json.Marshal(cfg)
		if err != nil {
			c.Fatalf("encode config: %v", err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			c.Fatalf("decode config: %v", err)
		}
		return sch.Validate(doc)
	}
	cfg := c.acct().Config
	if err := valid(cfg); err != nil {
		c.Errorf("configSchema refuses the subject's account config: %v", err)
	}
	extra := clone(cfg)
	extra["conformanceUnknownField"] = true
	if valid(extra) == nil {
		c.Errorf("configSchema accepts an unknown field (the manifest refuses it)")
	}
	for _, f := range d.Manifest {
		if !f.Required || f.Default != nil {
			continue
		}
		without := clone(cfg)
		delete(without, f.Name)
		if valid(without) == nil {
			c.Errorf("configSchema accepts a config without the required field %s", f.Name)
		}
	}
}

// compileSchema compiles a config schema, which must declare draft 2020-12.
func compileSchema(data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if m, ok := doc.(map[string]any); !ok || m["$schema"] != schemaDraft {
		return nil, api.Errorf(api.CodeInvalidConfig, "configSchema must be an object declaring \"$schema\": %q", schemaDraft)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("config-schema.json", doc); err != nil {
		return nil, err
	}
	return comp.Compile("config-schema.json")
}

// clone copies a config one level deep.
func clone(cfg map[string]any) map[string]any {
	out := make(map[string]any, len(cfg)+1)
	for k, v := range cfg {
		out[k] = v
	}
	return out
}

// defineCase is one broken variant of a definition and the path
// provider.Define must name.
type defineCase struct {
	name   string
	path   string
	mutate func(d *provider.Definition)
}

// brokenDefinitions are variants of d, each broken in one place.
func brokenDefinitions(d provider.Definition) []defineCase {
	field := func(f api.ManifestField) func(*provider.Definition) {
		return func(x *provider.Definition) { x.Manifest = append(slices.Clone(x.Manifest), f) }
	}
	lo, hi := int64(5), int64(1)
	cases := []defineCase{
		{"upper-case id", "id", func(x *provider.Definition) { x.ID = "Bad_ID" }},
		{"version not semver", "version", func(x *provider.Definition) { x.Version = "1.0" }},
		{"provides nothing", "provides", func(x *provider.Definition) { x.Provides = nil }},
		{"provides mainframe", "provides[" + strconv.Itoa(len(d.Provides)) + "]",
			func(x *provider.Definition) { x.Provides = append(slices.Clone(x.Provides), "mainframe") }},
		{"unknown capability", "capabilities[" + strconv.Itoa(len(d.Capabilities)) + "]", func(x *provider.Definition) {
			x.Capabilities = append(slices.Clone(x.Capabilities), "teleport")
		}},
		{"no constructor", "new", func(x *provider.Definition) { x.New = nil }},
		{"bad field name", "manifest.1conformance", field(api.ManifestField{Name: "1conformance", Type: provider.TypeString})},
		{"option without options", "manifest.conformanceOpt.options",
			field(api.ManifestField{Name: "conformanceOpt", Type: provider.TypeOption})},
		{"int min above max", "manifest.conformanceInt.min",
			field(api.ManifestField{Name: "conformanceInt", Type: provider.TypeInt, Min: &lo, Max: &hi})},
		{"secret with a default", "manifest.conformanceSecret.default",
			field(api.ManifestField{Name: "conformanceSecret", Type: provider.TypeSecret, Default: "x"})},
		{"list without item", "manifest.conformanceList.item", field(api.ManifestField{Name: "conformanceList", Type: provider.TypeList})},
		{"object without fields", "manifest.conformanceObj.fields", field(api.ManifestField{Name: "conformanceObj", Type: provider.TypeObject})},
		{"unknown field type", "manifest.conformanceW.type", field(api.ManifestField{Name: "conformanceW", Type: "widget"})},
	}
	if len(d.Capabilities) > 0 {
		cases = append(
			cases,
			defineCase{"capability twice", "capabilities[" + strconv.Itoa(len(d.Capabilities)) + "]", func(x *provider.Definition) {
				x.Capabilities = append(slices.Clone(x.Capabilities), x.Capabilities[0])
			}},
		)
	}
	if len(d.Manifest) > 0 {
		first := d.Manifest[0]
		cases = append(cases, defineCase{"field twice", "manifest." + first.Name, field(first)})
	}
	return cases
}

// defDefineRefuses: provider.Define refuses each broken variant of the
// described definition with INVALID_CONFIG naming the broken part.
func defDefineRefuses(c *check) {
	base := definitionOf(c.r.desc)
	if _, err := provider.Define(base); err != nil {
		c.Fatalf("the described definition itself is refused: %v", err)
	}
	for _, tc := range brokenDefinitions(base) {
		d := definitionOf(c.r.desc)
		tc.mutate(&d)
		_, err := provider.Define(d)
		if !c.expectCode("Define with "+tc.name, err, api.CodeInvalidConfig) {
			continue
		}
		if got := api.AsComputeError(err).Path(); got != tc.path {
			c.Errorf("Define with %s names path %q, want %q", tc.name, got, tc.path)
		}
	}
}

// defBuildsClient: a call with the subject's account builds a client.
func defBuildsClient(c *check) {
	ctx, cancel := c.callCtx()
	defer cancel()
	offers, err := c.remote().Offers(ctx, c.acct(), api.OfferQuery{})
	if err != nil {
		c.Fatalf("offers with the subject's account: %v", err)
	}
	c.Logf("the account's client answered %d offers", len(offers))
}
