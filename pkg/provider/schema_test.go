package provider_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

func TestConfigSchemaShape(t *testing.T) {
	manifest := []api.ManifestField{
		{Name: "token", Type: provider.TypeSecret, Required: true, Description: "API token"},
		{Name: "region", Type: provider.TypeOption, Options: []string{"a", "b"}, Default: "a", Required: true},
		{Name: "count", Type: provider.TypeInt, Min: i64(1), Max: i64(5), Default: 2},
		{Name: "zones", Type: provider.TypeList, Item: &api.ManifestField{Type: provider.TypeString}},
		{Name: "sshKey", Type: provider.TypeList, Item: &api.ManifestField{Type: provider.TypeString}},
		{Name: "apiKey", Type: provider.TypeString},
		{Name: "net", Type: provider.TypeObject, Fields: []api.ManifestField{{Name: "name", Type: provider.TypeString, Required: true}}},
		{Name: "on", Type: provider.TypeBool},
		{Name: "ips", Type: provider.TypeList}, // not Define-checked: no item type
	}
	var got any
	if err := json.Unmarshal(provider.ConfigSchema(manifest), &got); err != nil {
		t.Fatal(err)
	}
	ref := map[string]any{"type": "string", "pattern": "^(secret|env|vault)://"}
	want := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		"additionalProperties": false, "required": []any{"token"},
		"properties": map[string]any{
			"token":  map[string]any{"type": "string", "pattern": "^(secret|env|vault)://", "description": "API token"},
			"region": map[string]any{"type": "string", "enum": []any{"a", "b"}, "default": "a"},
			"count":  map[string]any{"type": "integer", "minimum": float64(1), "maximum": float64(5), "default": float64(2)},
			"zones":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"sshKey": map[string]any{"type": "array", "items": ref},
			"apiKey": ref,
			"net": map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name"},
				"properties": map[string]any{"name": map[string]any{"type": "string"}}},
			"on":  map[string]any{"type": "boolean"},
			"ips": map[string]any{"type": "array"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("schema:\n%s", gotJSON)
	}
}

// schemaCases are configs for configManifest that ValidateConfig and the
// JSON Schema of configManifest both accept (valid) or both refuse.
var schemaCases = []struct {
	name   string
	config string
	valid  bool
}{
	{"minimal", `{"token":"` + secretRef + `"}`, true},
	{"full", `{"token":"` + envRef + `","region":"nbg1","count":10,"offset":-1,"enabled":false,"label":"x","apiKey":"` + vaultRef +
		`","zones":["a"],"fallbackToken":["` + envRef + `"],"net":{"name":"n","password":"` + envRef + `"},"sizes":[{"vcpu":1}]}`, true},
	{"missing token", `{"count":2}`, false},
	{"unknown field", `{"token":"` + secretRef + `","bogus":1}`, false},
	{"plain token", `{"token":"hunter2"}`, false},
	{"plain apiKey", `{"token":"` + secretRef + `","apiKey":"abc"}`, false},
	{"plain item of a secret-named list", `{"token":"` + secretRef + `","fallbackToken":["abc"]}`, false},
	{"plain nested password", `{"token":"` + secretRef + `","net":{"name":"n","password":"pw"}}`, false},
	{"count above max", `{"token":"` + secretRef + `","count":11}`, false},
	{"count with a fraction", `{"token":"` + secretRef + `","count":1.5}`, false},
	{"region not offered", `{"token":"` + secretRef + `","region":"hel1"}`, false},
	{"nested required", `{"token":"` + secretRef + `","net":{}}`, false},
	{"list item type", `{"token":"` + secretRef + `","zones":[1]}`, false},
	{"object item required", `{"token":"` + secretRef + `","sizes":[{}]}`, false},
	{"bool type", `{"token":"` + secretRef + `","enabled":"yes"}`, false},
}

func TestSchemaCasesValidateConfig(t *testing.T) {
	for _, tc := range schemaCases {
		var config map[string]any
		if err := json.Unmarshal([]byte(tc.config), &config); err != nil {
			t.Fatal(err)
		}
		if _, err := provider.ValidateConfig(configManifest, config); (err == nil) != tc.valid {
			t.Errorf("%s: ValidateConfig = %v, want valid %v", tc.name, err, tc.valid)
		}
	}
}
