package provider_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"better-compute.io/compute/pkg/provider"
)

// TestConfigSchemaCompiles: the schema of a manifest compiles as JSON Schema
// 2020-12 and agrees with ValidateConfig on schemaCases.
func TestConfigSchemaCompiles(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(provider.ConfigSchema(configManifest)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("config.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("config.schema.json")
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	for _, tc := range schemaCases {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.config))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); (err == nil) != tc.valid {
			t.Errorf("%s: schema says %v, want valid %v", tc.name, err, tc.valid)
		}
	}
}
