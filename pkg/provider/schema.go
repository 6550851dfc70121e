package provider

import (
	"encoding/json"

	"better-compute.io/compute/pkg/api"
)

// ConfigSchema renders a manifest as a JSON Schema (2020-12) document for an
// account config, so tools that do not link this package can validate configs.
func ConfigSchema(manifest []api.ManifestField) json.RawMessage {
	doc := objectSchema(manifest)
	doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	data, _ := json.Marshal(doc) // only maps, strings, numbers and bools
	return data
}

func objectSchema(fields []api.ManifestField) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range fields {
		props[f.Name] = fieldSchema(f)
		if f.Required && f.Default == nil {
			required = append(required, f.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func fieldSchema(f api.ManifestField) map[string]any {
	var s map[string]any
	switch f.Type {
	case TypeString:
		s = map[string]any{"type": "string"}
		if IsSecretFieldName(f.Name) {
			s["pattern"] = secretRefPattern
		}
	case TypeSecret:
		s = map[string]any{"type": "string", "pattern": secretRefPattern}
	case TypeOption:
		s = map[string]any{"type": "string", "enum": f.Options}
	case TypeInt:
		s = map[string]any{"type": "integer"}
		if f.Min != nil {
			s["minimum"] = *f.Min
		}
		if f.Max != nil {
			s["maximum"] = *f.Max
		}
	case TypeBool:
		s = map[string]any{"type": "boolean"}
	case TypeList:
		s = map[string]any{"type": "array"}
		if f.Item != nil {
			s["items"] = fieldSchema(itemField(f))
		}
	case TypeObject:
		s = objectSchema(f.Fields)
	default:
		s = map[string]any{}
	}
	if f.Description != "" {
		s["description"] = f.Description
	}
	if f.Default != nil {
		s["default"] = f.Default
	}
	return s
}

// secretRefPattern matches the three reference schemes.
const secretRefPattern = `^(secret|env|vault)://`
