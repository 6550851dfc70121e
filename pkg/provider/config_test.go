package provider_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

const (
	secretRef = "secret://acme/sec_01jd0000000000000000000000"
	envRef    = "env://HCLOUD_TOKEN"
	vaultRef  = "vault://kv/team/hetzner#token"
	plainHint = " must be a secret reference (secret://<tenant>/<id>, env://NAME or vault://<mount>/<path>#<field>), not a plain value: store it with secrets.put first"
)

// configManifest exercises every field type.
var configManifest = []api.ManifestField{
	{Name: "token", Type: provider.TypeSecret, Required: true},
	{Name: "region", Type: provider.TypeOption, Options: []string{"fsn1", "nbg1"}, Default: "fsn1"},
	{Name: "count", Type: provider.TypeInt, Min: i64(1), Max: i64(10), Default: 2},
	{Name: "offset", Type: provider.TypeInt},
	{Name: "enabled", Type: provider.TypeBool},
	{Name: "label", Type: provider.TypeString},
	{Name: "apiKey", Type: provider.TypeString},
	{Name: "PASSWORD", Type: provider.TypeString},
	{Name: "token_secret", Type: provider.TypeString},
	{Name: "zones", Type: provider.TypeList, Item: &api.ManifestField{Type: provider.TypeString}},
	{Name: "fallbackToken", Type: provider.TypeList, Item: &api.ManifestField{Type: provider.TypeString}},
	{Name: "tags", Type: provider.TypeList, Default: []any{"a"}, Item: &api.ManifestField{Type: provider.TypeString}},
	{Name: "net", Type: provider.TypeObject, Fields: []api.ManifestField{
		{Name: "name", Type: provider.TypeString, Required: true},
		{Name: "password", Type: provider.TypeString},
	}},
	{Name: "sizes", Type: provider.TypeList, Item: &api.ManifestField{Type: provider.TypeObject, Fields: []api.ManifestField{
		{Name: "vcpu", Type: provider.TypeInt, Required: true},
	}}},
}

func TestConfigManifestDefines(t *testing.T) {
	d := validDefinition()
	d.Manifest = configManifest
	if _, err := provider.Define(d); err != nil {
		t.Fatalf("the test manifest does not define: %v", err)
	}
}

// withToken is a config with the required token and the given fields.
func withToken(kv ...any) map[string]any {
	m := map[string]any{"token": secretRef}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// defaults are the fields ValidateConfig adds to a config that omits them.
func defaults(kv ...any) map[string]any {
	m := map[string]any{"region": "fsn1", "count": int64(2), "tags": []any{"a"}}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestValidateConfig(t *testing.T) {
	tests := []struct {
		name    string
		config  map[string]any
		want    map[string]any // on success
		code    api.Code
		path    string
		message string
		allowed []string // details.allowed
	}{
		{name: "defaults applied", config: withToken(), want: defaults("token", secretRef)},
		{name: "null is absent", config: withToken("count", nil, "label", nil), want: defaults("token", secretRef)},
		{name: "every field", config: withToken("region", "nbg1", "count", float64(10), "offset", float64(-3), "enabled", true,
			"label", "prod", "apiKey", envRef, "PASSWORD", vaultRef, "token_secret", secretRef, "zones", []any{"a", "b"},
			"fallbackToken", []any{envRef}, "tags", []any{}, "net", map[string]any{"name": "n", "password": envRef},
			"sizes", []any{map[string]any{"vcpu": float64(2)}}),
			want: map[string]any{"token": secretRef, "region": "nbg1", "count": int64(10), "offset": int64(-3), "enabled": true,
				"label": "prod", "apiKey": envRef, "PASSWORD": vaultRef, "token_secret": secretRef, "zones": []any{"a", "b"},
				"fallbackToken": []any{envRef}, "tags": []any{}, "net": map[string]any{"name": "n", "password": envRef},
				"sizes": []any{map[string]any{"vcpu": int64(2)}}}},
		{name: "env ref in a secret field", config: map[string]any{"token": envRef}, want: defaults("token", envRef)},
		{name: "vault ref in a secret field", config: map[string]any{"token": vaultRef}, want: defaults("token", vaultRef)},
		{name: "ints from Go and json.Number", config: withToken("count", 3, "offset", json.Number("7")),
			want: defaults("token", secretRef, "count", int64(3), "offset", int64(7))},

		{name: "unknown field", config: withToken("bogus", 1), code: api.CodeInvalidConfig, path: "config.bogus",
			message: `unknown field "bogus" (fields: ` + strings.Join(manifestNames(configManifest), ", ") + `)`,
			allowed: manifestNames(configManifest)},
		{name: "missing required", config: map[string]any{}, code: api.CodeInvalidConfig, path: "config.token",
			message: "config.token is required"},
		{name: "null required", config: map[string]any{"token": nil}, code: api.CodeInvalidConfig, path: "config.token",
			message: "config.token is required"},
		{name: "secret not a string", config: map[string]any{"token": float64(5)}, code: api.CodeInvalidConfig, path: "config.token",
			message: "config.token must be a secret reference string, not a number"},
		{name: "option not a string", config: withToken("region", true), code: api.CodeInvalidConfig, path: "config.region",
			message: "config.region must be a string, not a boolean"},
		{name: "int from a string", config: withToken("count", "3"), code: api.CodeInvalidConfig, path: "config.count",
			message: "config.count must be an integer, not a string"},
		{name: "bool from a string", config: withToken("enabled", "yes"), code: api.CodeInvalidConfig, path: "config.enabled",
			message: "config.enabled must be a boolean, not a string"},
		{name: "string from an object", config: withToken("label", map[string]any{}), code: api.CodeInvalidConfig, path: "config.label",
			message: "config.label must be a string, not an object"},
		{name: "list from a string", config: withToken("zones", "fsn1"), code: api.CodeInvalidConfig, path: "config.zones",
			message: "config.zones must be an array, not a string"},
		{name: "object from an array", config: withToken("net", []any{}), code: api.CodeInvalidConfig, path: "config.net",
			message: "config.net must be an object, not an array"},
		{name: "option not offered", config: withToken("region", "hel1"), code: api.CodeInvalidConfig, path: "config.region",
			message: "config.region must be one of [fsn1 nbg1]"},
		{name: "int below min", config: withToken("count", float64(0)), code: api.CodeInvalidConfig, path: "config.count",
			message: "config.count must be within [1, 10]"},
		{name: "int above max", config: withToken("count", float64(11)), code: api.CodeInvalidConfig, path: "config.count",
			message: "config.count must be within [1, 10]"},
		{name: "int with a fraction", config: withToken("count", 2.5), code: api.CodeInvalidConfig, path: "config.count",
			message: "config.count must be an integer, not a number"},
		{name: "int beyond 2^53", config: withToken("offset", 1e300), code: api.CodeInvalidConfig, path: "config.offset",
			message: "config.offset must be an integer, not a number"},
		{name: "list item of wrong type", config: withToken("zones", []any{"a", float64(3)}), code: api.CodeInvalidConfig,
			path: "config.zones[1]", message: "config.zones[1] must be a string, not a number"},
		{name: "nested required", config: withToken("net", map[string]any{}), code: api.CodeInvalidConfig, path: "config.net.name",
			message: "config.net.name is required"},
		{name: "nested unknown", config: withToken("net", map[string]any{"name": "n", "mtu": float64(1)}), code: api.CodeInvalidConfig,
			path: "config.net.mtu", message: `unknown field "mtu" (fields: name, password)`, allowed: []string{"name", "password"}},
		{name: "required in a list of objects", config: withToken("sizes", []any{map[string]any{"vcpu": float64(1)}, map[string]any{}}),
			code: api.CodeInvalidConfig, path: "config.sizes[1].vcpu", message: "config.sizes[1].vcpu is required"},

		{name: "plain value in a secret field", config: map[string]any{"token": "hunter2"}, code: api.CodeInvalidInput,
			path: "config.token", message: "config.token" + plainHint},
		{name: "plain value in apiKey", config: withToken("apiKey", "abc123"), code: api.CodeInvalidInput,
			path: "config.apiKey", message: "config.apiKey" + plainHint},
		{name: "plain value in PASSWORD", config: withToken("PASSWORD", "pw"), code: api.CodeInvalidInput,
			path: "config.PASSWORD", message: "config.PASSWORD" + plainHint},
		{name: "plain value in token_secret", config: withToken("token_secret", "s"), code: api.CodeInvalidInput,
			path: "config.token_secret", message: "config.token_secret" + plainHint},
		{name: "plain value in a nested password", config: withToken("net", map[string]any{"name": "n", "password": "pw"}),
			code: api.CodeInvalidInput, path: "config.net.password", message: "config.net.password" + plainHint},
		{name: "plain value in a list named like a secret", config: withToken("fallbackToken", []any{envRef, "tok"}),
			code: api.CodeInvalidInput, path: "config.fallbackToken[1]", message: "config.fallbackToken[1]" + plainHint},
		{name: "malformed secret:// ref", config: map[string]any{"token": "secret://acme/not-an-id"}, code: api.CodeInvalidInput,
			path: "config.token", message: "config.token: malformed secret:// reference (want secret://<tenant>/sec_<ulid>)"},
		{name: "malformed env:// ref", config: map[string]any{"token": "env://1BAD"}, code: api.CodeInvalidInput,
			path: "config.token", message: "config.token: malformed env:// reference (want env://NAME, NAME of letters, digits and _)"},
		{name: "malformed ref in a secret-named string", config: withToken("apiKey", "secret://x"), code: api.CodeInvalidInput,
			path: "config.apiKey", message: "config.apiKey: malformed secret:// reference (want secret://<tenant>/sec_<ulid>)"},
		{name: "malformed ref in a plain string", config: withToken("label", "vault://kv#"), code: api.CodeInvalidInput,
			path: "config.label", message: "config.label: malformed vault:// reference (want vault://<mount>/<path>#<field>)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := provider.ValidateConfig(configManifest, tc.config)
			if tc.code == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("ValidateConfig = %#v, %v; want %#v", got, err, tc.want)
				}
				return
			}
			want := api.Errorf(tc.code, "%s", tc.message).WithPath(tc.path)
			want.Details.Allowed = tc.allowed
			if got != nil || !reflect.DeepEqual(api.AsComputeError(err), want) {
				t.Fatalf("ValidateConfig = %v, %#v; want %#v", got, err, want)
			}
			for _, v := range tc.config {
				if s, ok := v.(string); ok && len(s) > 3 && !strings.Contains(s, "://") && strings.Contains(err.Error(), s) {
					t.Fatalf("error %q quotes the value %q", err, s)
				}
			}
		})
	}
}

func TestValidateConfigCopies(t *testing.T) {
	in := withToken("net", map[string]any{"name": "n"})
	out, err := provider.ValidateConfig(configManifest, in)
	if err != nil {
		t.Fatal(err)
	}
	out["net"].(map[string]any)["name"] = "changed"
	out["tags"].([]any)[0] = "changed"
	if in["net"].(map[string]any)["name"] != "n" {
		t.Fatal("the result shares the input's object")
	}
	if again, _ := provider.ValidateConfig(configManifest, withToken()); !reflect.DeepEqual(again["tags"], []any{"a"}) {
		t.Fatalf("the result shares the manifest's default: %v", again["tags"])
	}
}

func TestValidateConfigRemoteManifest(t *testing.T) {
	// A manifest described by a provider in another language is not checked
	// by Define: a list without an item type is refused, not a panic.
	manifest := []api.ManifestField{{Name: "ips", Type: provider.TypeList}, {Name: "x", Type: "float"}}
	_, err := provider.ValidateConfig(manifest, map[string]any{"ips": []any{"a"}})
	if want := api.InvalidConfig("config.ips", "list field config.ips declares no item type"); !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("ValidateConfig = %#v, want %#v", err, want)
	}
	_, err = provider.ValidateConfig(manifest, map[string]any{"x": 1.5})
	if want := api.InvalidConfig("config.x", `unknown field type "float"`); !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("ValidateConfig = %#v, want %#v", err, want)
	}
}

func TestCheckPlainSecrets(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		path    string
		message string
	}{
		{name: "nothing secret", doc: `{"name":"a","count":3,"list":["x",{"y":null}]}`},
		{name: "refs under secret names", doc: `{"token":"` + secretRef + `","apiKey":"` + envRef + `","db":{"password":"` + vaultRef + `"}}`},
		{name: "non-strings under secret names", doc: `{"token":5,"sshKey":true,"password":null,"apiKey":{"id":"x"}}`},
		{name: "not an object", doc: `"plain"`},
		{name: "a number", doc: `42`},
		{name: "plain token", doc: `{"token":"abc"}`, path: "config.token", message: "config.token" + plainHint},
		{name: "empty token", doc: `{"token":""}`, path: "config.token", message: "config.token" + plainHint},
		{name: "case and suffix", doc: `{"API_TOKEN":"abc"}`, path: "config.API_TOKEN", message: "config.API_TOKEN" + plainHint},
		{name: "deep", doc: `{"a":{"b":{"c":{"d":{"secret":"x"}}}}}`, path: "config.a.b.c.d.secret", message: "config.a.b.c.d.secret" + plainHint},
		{name: "array under a secret name", doc: `{"sshKey":["` + envRef + `","ssh-ed25519 AAAA"]}`, path: "config.sshKey[1]",
			message: "config.sshKey[1]" + plainHint},
		{name: "nested arrays", doc: `{"token":[["` + envRef + `"],["x"]]}`, path: "config.token[1][0]", message: "config.token[1][0]" + plainHint},
		{name: "object in an array", doc: `{"users":[{"name":"a"},{"name":"b","password":"pw"}]}`, path: "config.users[1].password",
			message: "config.users[1].password" + plainHint},
		{name: "first in key order", doc: `{"b_token":"x","a_token":"y"}`, path: "config.a_token", message: "config.a_token" + plainHint},
		{name: "malformed ref anywhere", doc: `{"description":"secret://acme/x"}`, path: "config.description",
			message: "config.description: malformed secret:// reference (want secret://<tenant>/sec_<ulid>)"},
		{name: "malformed ref in an array", doc: `{"list":[1,"env://1BAD"]}`, path: "config.list[1]",
			message: "config.list[1]: malformed env:// reference (want env://NAME, NAME of letters, digits and _)"},
		{name: "malformed ref at the root", doc: `"vault://x"`, path: "config",
			message: "config: malformed vault:// reference (want vault://<mount>/<path>#<field>)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc any
			if err := json.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			err := provider.CheckPlainSecrets("config", doc)
			if tc.path == "" {
				if err != nil {
					t.Fatalf("CheckPlainSecrets = %v", err)
				}
				return
			}
			want := api.InvalidInput(tc.path, "%s", tc.message)
			if !reflect.DeepEqual(api.AsComputeError(err), want) {
				t.Fatalf("CheckPlainSecrets = %#v, want %#v", err, want)
			}
		})
	}
}

func TestIsSecretFieldName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"token", true}, {"apiToken", true}, {"API_TOKEN", true}, {"token_secret", true}, {"clientSecret", true},
		{"password", true}, {"PASSWORD", true}, {"dbPassword", true}, {"key", true}, {"apiKey", true},
		{"SSHKey", true}, {"ssh_key", true},
		{"tokens", false}, {"tokenId", false}, {"secretRef", false}, {"passwordFile", false}, {"keys", false},
		{"keyName", false}, {"name", false}, {"region", false}, {"", false},
	}
	for _, tc := range tests {
		if got := provider.IsSecretFieldName(tc.name); got != tc.want {
			t.Errorf("IsSecretFieldName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDecodeConfig(t *testing.T) {
	cfg, err := provider.ValidateConfig(configManifest, withToken("zones", []any{"a"}))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Token  string   `json:"token"`
		Region string   `json:"region"`
		Count  int      `json:"count"`
		Zones  []string `json:"zones"`
	}
	if err := provider.DecodeConfig(cfg, &v); err != nil || v.Token != secretRef || v.Region != "fsn1" || v.Count != 2 || !reflect.DeepEqual(v.Zones, []string{"a"}) {
		t.Fatalf("DecodeConfig = %+v, %v", v, err)
	}
	var wrong struct {
		Count string `json:"count"`
	}
	err = provider.DecodeConfig(cfg, &wrong)
	want := api.Errorf(api.CodeInvalidConfig, "config does not decode: json: cannot unmarshal number into Go struct field .count of type string")
	if !reflect.DeepEqual(api.AsComputeError(err), want) {
		t.Fatalf("DecodeConfig = %#v, want %#v", err, want)
	}
}

// manifestNames lists the names of fields, in order.
func manifestNames(fields []api.ManifestField) []string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}
