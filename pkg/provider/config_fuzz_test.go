package provider_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// FuzzCheckPlainSecrets: on any JSON document CheckPlainSecrets never
// panics; a refusal is INVALID_INPUT naming a string of the document by its
// path, and its message is the fixed text for a plain value or a malformed
// reference (it never quotes the value).
func FuzzCheckPlainSecrets(f *testing.F) {
	for _, s := range []string{
		`{"token":"abc"}`, `{"a":[{"password":"x"},["y"]]}`, `{"sshKey":["` + envRef + `"]}`,
		`{"x":"secret://acme/x"}`, `"env://A"`, `[1,2,{"key":{"key":"v"}}]`, `{"a.b":{"token":"x"}}`, `null`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var doc any
		if json.Unmarshal([]byte(data), &doc) != nil {
			return
		}
		err := provider.CheckPlainSecrets("config", doc)
		if err == nil {
			return
		}
		ce, ok := err.(*api.ComputeError)
		if !ok || ce.Code != api.CodeInvalidInput {
			t.Fatalf("CheckPlainSecrets(%s) = %v, want INVALID_INPUT", data, err)
		}
		values := map[string]any{}
		collect(doc, "config", values)
		v, found := values[ce.Path()]
		s, isString := v.(string)
		if !found || !isString {
			t.Fatalf("CheckPlainSecrets(%s): path %q names no string of the document", data, ce.Path())
		}
		if api.LooksLikeSecretRef(s) {
			_, perr := api.ParseSecretRef(s)
			if perr == nil || ce.Message != ce.Path()+": "+api.AsComputeError(perr).Message {
				t.Fatalf("CheckPlainSecrets(%s): message %q for reference %q (parse: %v)", data, ce.Message, s, perr)
			}
		} else if ce.Message != ce.Path()+plainHint {
			t.Fatalf("CheckPlainSecrets(%s): message %q for a plain value", data, ce.Message)
		}
	})
}

// collect maps the path of every value below v (root path) to the value.
func collect(v any, path string, out map[string]any) {
	out[path] = v
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			collect(child, path+"."+k, out)
		}
	case []any:
		for i, child := range x {
			collect(child, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// FuzzValidateConfig: on any JSON object ValidateConfig never panics; it
// refuses with INVALID_CONFIG or INVALID_INPUT at a config path, or returns a
// config that validates to itself and holds no plain secret.
func FuzzValidateConfig(f *testing.F) {
	for _, s := range []string{
		`{"token":"` + secretRef + `"}`,
		`{"token":"` + envRef + `","count":3,"zones":["a"],"net":{"name":"n","password":"` + vaultRef + `"}}`,
		`{"token":"x","region":"hel1"}`, `{"token":"` + envRef + `","sizes":[{"vcpu":1.5},{}]}`,
		`{"token":"` + envRef + `","fallbackToken":["a"],"apiKey":"secret://x"}`, `{}`, `{"bogus":[]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var config map[string]any
		if json.Unmarshal([]byte(data), &config) != nil {
			return
		}
		out, err := provider.ValidateConfig(configManifest, config)
		if err != nil {
			ce, ok := err.(*api.ComputeError)
			if !ok || (ce.Code != api.CodeInvalidConfig && ce.Code != api.CodeInvalidInput) || !strings.HasPrefix(ce.Path(), "config.") {
				t.Fatalf("ValidateConfig(%s) = %#v", data, err)
			}
			return
		}
		again, err := provider.ValidateConfig(configManifest, out)
		if err != nil || !reflect.DeepEqual(again, out) {
			t.Fatalf("ValidateConfig(%s) = %v, which validates to %v, %v", data, out, again, err)
		}
		if err := provider.CheckPlainSecrets("config", out); err != nil {
			t.Fatalf("ValidateConfig(%s) accepted %v: %v", data, out, err)
		}
	})
}
