package provider

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// ValidateConfig checks config against manifest and returns a copy with
// defaults filled in (null counts as absent). Ints come back as int64, lists
// as []any, objects as map[string]any. Paths in errors start with "config.".
//
// Errors: INVALID_CONFIG naming the field for an unknown field, a missing
// required field, a wrong type, an option not offered, an int out of range;
// INVALID_INPUT for a plain value where a secret reference belongs (a secret
// field, or any string field whose name ends in token, secret, password or
// key, at any depth; the unnamed items of a list take the list's name) and
// for a malformed secret reference in any string field.
func ValidateConfig(manifest []api.ManifestField, config map[string]any) (map[string]any, error) {
	out, err := validateObject("config", manifest, config)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func validateObject(path string, fields []api.ManifestField, in map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(fields))
	for _, name := range sortedKeys(in) {
		if !slices.ContainsFunc(fields, func(f api.ManifestField) bool { return f.Name == name }) {
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.Name
			}
			ce := api.InvalidConfig(path+"."+name, "unknown field %q (fields: %s)", name, strings.Join(names, ", "))
			ce.Details.Allowed = names
			return nil, ce
		}
	}
	for _, f := range fields {
		p := path + "." + f.Name
		v, present := in[f.Name]
		if !present || v == nil {
			if f.Default == nil {
				if f.Required {
					return nil, api.InvalidConfig(p, "%s is required", p)
				}
				continue
			}
			v = f.Default // validated like a value: a copy, ints as int64
		}
		val, err := validateValue(p, f, v)
		if err != nil {
			return nil, err
		}
		out[f.Name] = val
	}
	return out, nil
}

func validateValue(p string, f api.ManifestField, v any) (any, error) {
	switch f.Type {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return nil, typeError(p, "a string", v)
		}
		return s, checkString(p, IsSecretFieldName(f.Name), s)
	case TypeSecret:
		s, ok := v.(string)
		if !ok {
			return nil, typeError(p, "a secret reference string", v)
		}
		return s, checkString(p, true, s)
	case TypeOption:
		s, ok := v.(string)
		if !ok {
			return nil, typeError(p, "a string", v)
		}
		if !slices.Contains(f.Options, s) {
			return nil, api.InvalidConfig(p, "%s must be one of %v", p, f.Options)
		}
		return s, nil
	case TypeInt:
		n, ok := asInt(v)
		if !ok {
			return nil, typeError(p, "an integer", v)
		}
		if f.Min != nil && n < *f.Min || f.Max != nil && n > *f.Max {
			return nil, api.InvalidConfig(p, "%s must be within %s", p, rangeText(f))
		}
		return n, nil
	case TypeBool:
		b, ok := v.(bool)
		if !ok {
			return nil, typeError(p, "a boolean", v)
		}
		return b, nil
	case TypeList:
		items, ok := v.([]any)
		if !ok {
			return nil, typeError(p, "an array", v)
		}
		if f.Item == nil {
			return nil, api.InvalidConfig(p, "list field %s declares no item type", p)
		}
		out := make([]any, len(items))
		for i, item := range items {
			val, err := validateValue(fmt.Sprintf("%s[%d]", p, i), itemField(f), item)
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	case TypeObject:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, typeError(p, "an object", v)
		}
		return validateObject(p, f.Fields, m)
	}
	return nil, api.InvalidConfig(p, "unknown field type %q", f.Type)
}

// itemField is the element field of list f. An unnamed element takes the
// list's name, so a list named like a secret holds secret references.
func itemField(f api.ManifestField) api.ManifestField {
	item := *f.Item
	if item.Name == "" {
		item.Name = f.Name
	}
	return item
}

// checkString refuses a plain value where a secret reference belongs
// (secret) and a malformed reference anywhere. Errors: INVALID_INPUT at p.
func checkString(p string, secret bool, s string) error {
	if api.LooksLikeSecretRef(s) {
		if _, err := api.ParseSecretRef(s); err != nil {
			return withPath(err, p)
		}
		return nil
	}
	if secret {
		return plainSecretError(p)
	}
	return nil
}

// asInt accepts JSON numbers (float64) without a fraction and Go integers.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	case int:
		return int64(n), true
	case int64:
		return n, true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

func rangeText(f api.ManifestField) string {
	lo, hi := "-inf", "+inf"
	if f.Min != nil {
		lo = fmt.Sprint(*f.Min)
	}
	if f.Max != nil {
		hi = fmt.Sprint(*f.Max)
	}
	return "[" + lo + ", " + hi + "]"
}

// typeError names the expected JSON type, never the value (it may be a secret).
func typeError(p, want string, v any) error {
	return api.InvalidConfig(p, "%s must be %s, not %s", p, want, jsonTypeName(v))
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func plainSecretError(p string) error {
	return api.InvalidInput(p, "%s must be a secret reference (secret://<tenant>/<id>, env://NAME or "+
		"vault://<mount>/<path>#<field>), not a plain value: store it with secrets.put first", p)
}

func withPath(err error, p string) error {
	ce := api.AsComputeError(err)
	return (&api.ComputeError{Code: ce.Code, Message: p + ": " + ce.Message}).WithPath(p)
}

// secretSuffixes end the names of fields that must hold secret references.
var secretSuffixes = []string{"token", "secret", "password", "key"}

// IsSecretFieldName reports whether a config field called name must hold a
// secret reference: its name ends in token, secret, password or key, in any
// case ("apiToken", "token_secret", "SSHKey").
func IsSecretFieldName(name string) bool {
	lower := strings.ToLower(name)
	for _, s := range secretSuffixes {
		if strings.HasSuffix(lower, s) {
			return true
		}
	}
	return false
}

// CheckPlainSecrets walks any JSON value (as decoded by encoding/json) and
// refuses the first string under a secret-named key (IsSecretFieldName), at
// any depth and inside arrays, that is not a secret reference: INVALID_INPUT
// with details.path (path is the root's path, e.g. "config"). Secret
// references found anywhere must parse (INVALID_INPUT otherwise).
func CheckPlainSecrets(path string, v any) error {
	return checkPlain(path, "", v)
}

func checkPlain(path, name string, v any) error {
	switch x := v.(type) {
	case string:
		return checkString(path, name != "" && IsSecretFieldName(name), x)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if err := checkPlain(path+"."+k, k, x[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range x {
			if err := checkPlain(fmt.Sprintf("%s[%d]", path, i), name, item); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// DecodeConfig copies a validated config into v (a struct with json tags).
// Errors: INVALID_CONFIG.
func DecodeConfig(config map[string]any, v any) error {
	data, err := json.Marshal(config)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		return api.Errorf(api.CodeInvalidConfig, "config does not decode: %v", err)
	}
	return nil
}
