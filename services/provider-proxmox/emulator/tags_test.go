package emulator

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestNormalizeTags(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "", want: ""},
		{in: "web", want: "web"},
		{in: "b,a", want: "a;b"},
		{in: "b;a", want: "a;b"},
		{in: "b a", want: "a;b"},
		{in: " Web ;prod,, PROD\tweb ", want: "prod;web"},
		{in: "k8s.node,k8s-node,k8s+x,_x", want: "_x;k8s+x;k8s-node;k8s.node"},
		{in: "a;;;b;", want: "a;b"},
		{in: "bad/tag", bad: true},
		{in: "-lead", bad: true},
		{in: "ok,ümlaut", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := NormalizeTags(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("NormalizeTags(%q) = %q, want an error", tc.in, got)
				}
				return
			}
			noErr(t, err)
			equal(t, got, tc.want, "NormalizeTags("+tc.in+")")
		})
	}
}

func TestTagsNormalisedOverHTTP(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	x.clone(101, "web-1")
	for in, want := range map[string]string{
		"B,a;c a":        "a;b;c",
		"Prod prod PROD": "prod",
		"z,y":            "y;z",
	} {
		r := x.do(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"tags": {in}})
		equal(t, r.status, http.StatusOK, "PUT tags "+in)
		equal(t, x.config(101)["tags"], want, "stored tags for "+in)
	}
	r := x.do(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"tags": {"ok,no/slash"}})
	equal(t, r.status, http.StatusBadRequest, "invalid tag status")
	errs, _ := r.body["errors"].(map[string]any)
	equal(t, errs["tags"], "invalid format - invalid characters in tag 'no/slash'", "invalid tag error")
}

func FuzzParseTags(f *testing.F) {
	for _, seed := range []string{"", "a", "B,a;c d", " ;;, ", "x/y", "k8s.node+1", "ÄÖ", "a\x00b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tags, err := ParseTags(in)
		if err != nil {
			return
		}
		norm := strings.Join(tags, ";")
		again, err := NormalizeTags(norm)
		if err != nil {
			t.Fatalf("normalised %q does not parse: %v", norm, err)
		}
		if again != norm {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, norm, again)
		}
		for i, tag := range tags {
			if tag == "" || tag != strings.ToLower(tag) || (i > 0 && tags[i-1] >= tag) {
				t.Fatalf("ParseTags(%q) = %q: not lower-case, sorted and unique", in, tags)
			}
		}
	})
}
