package accounts

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

func TestSecretRefs(t *testing.T) {
	config := map[string]any{
		"token":  "secret://t1/sec_01jd0000000000000000000000",
		"n":      float64(5),
		"nested": map[string]any{"apiKey": "env://API_KEY", "endpoint": "https://api.example"},
		"keys":   []any{"vault://kv/hcloud#token", "plain", []any{"env://DEEP"}},
	}
	want := []refAt{
		{"config.keys[0]", "vault://kv/hcloud#token"},
		{"config.keys[2][0]", "env://DEEP"},
		{"config.nested.apiKey", "env://API_KEY"},
		{"config.token", "secret://t1/sec_01jd0000000000000000000000"},
	}
	if got := secretRefs("config", config); !reflect.DeepEqual(got, want) {
		t.Fatalf("secretRefs = %v, want %v", got, want)
	}
	if got := secretRefs("config", map[string]any(nil)); got != nil {
		t.Fatalf("secretRefs of nil = %v", got)
	}
}

func FuzzSecretRefs(f *testing.F) {
	f.Add(`{"token":"secret://t1/sec_01jd0000000000000000000000","a":{"b":["env://X",{"c":"vault://m/p#f"}]}}`)
	f.Add(`{"x":"env://","y":[[["secret://"]]],"z":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		var config map[string]any
		if bus.DecodeLoose([]byte(body), &config) != nil {
			return
		}
		refs := secretRefs("config", config)
		seen := map[string]bool{}
		for _, r := range refs {
			if !api.LooksLikeSecretRef(r.ref) || !strings.HasPrefix(r.path, "config") || seen[r.path] {
				t.Fatalf("bad or repeated reference %+v in %v", r, refs)
			}
			seen[r.path] = true
		}
	})
}

func FuzzCheckPoolRequest(f *testing.F) {
	f.Add(`{"class":"provider","providerAccountId":"pacct_01jd0000000000000000000000","agent":"none","flavors":[{"name":"a","offerId":"cx22"}]}`)
	f.Add(`{"class":"provider","providerAccountId":"pacct_01jd0000000000000000000000","agent":"none","flavors":[{"name":"a","offerId":"x"},{"name":"a","offerId":"y"}]}`)
	f.Add(`{"class":"x","flavors":[{"name":5}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var in api.PoolCreateRequest
		if bus.Decode([]byte(body), &in) != nil {
			return
		}
		if err := checkPoolRequest(&in); err != nil {
			ce := api.AsComputeError(err)
			if ce.Code != api.CodeInvalidInput || ce.Path() == "" {
				t.Fatalf("refusal %v has code %s and path %q", ce, ce.Code, ce.Path())
			}
			return
		}
		names := make([]string, 0, len(in.Flavors))
		for _, fl := range in.Flavors {
			if !flavorNamePattern.MatchString(fl.Name) || fl.OfferID == "" || slices.Contains(names, fl.Name) {
				t.Fatalf("accepted bad flavor %+v in %+v", fl, in)
			}
			names = append(names, fl.Name)
		}
		if in.Class != api.PoolClassProvider || in.Agent != api.PoolAgentNone || len(names) == 0 ||
			!api.ValidID(api.PrefixAccount, in.ProviderAccountID) {
			t.Fatalf("accepted %+v", in)
		}
	})
}

// Names hold printable characters only (issue 20): NUL, ESC, CR/LF and the
// bidi override U+202E are refused naming the field; printable names,
// "*.>" too, are kept as given.
func TestCheckNameRefusesUnprintable(t *testing.T) {
	for _, bad := range []string{"a\x00b", "a\x1b[31mb", "a\r\nb", "evil\u202egpj.exe", "\xff", strings.Repeat("n", maxNameLength+1)} {
		err := checkName("name", bad, true)
		if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "name" {
			t.Errorf("checkName(%q) = %v, want INVALID_INPUT path name", bad, err)
		}
	}
	for _, good := range []string{"prod", "Zürich 2", "*.>", strings.Repeat("ü", maxNameLength)} {
		if err := checkName("name", good, true); err != nil {
			t.Errorf("checkName(%q) = %v, want nil", good, err)
		}
	}
}

// TestCheckPoolReleaseWipe: release.wipe is for host pools only.
func TestCheckPoolReleaseWipe(t *testing.T) {
	in := api.PoolCreateRequest{Class: api.PoolClassProvider, ProviderAccountID: "pacct_01jd0000000000000000000000",
		Agent: api.PoolAgentNone, Flavors: []api.Flavor{{Name: "a", OfferID: "cx22"}}, Release: &api.PoolRelease{Wipe: true}}
	if ce := api.AsComputeError(checkPoolRequest(&in)); ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "release.wipe" {
		t.Fatalf("release.wipe on a provider pool = %v, want INVALID_INPUT at release.wipe", ce)
	}
	if err := api.CheckPoolRelease(api.PoolClassMetalHost, in.Release); err != nil {
		t.Fatalf("release.wipe on a metal-host pool = %v", err)
	}
}
