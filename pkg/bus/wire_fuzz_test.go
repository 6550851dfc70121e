package bus_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// FuzzDecode: Decode never panics; it succeeds or answers INVALID_INPUT with
// details.path, and a non-empty path names a value of the document.
func FuzzDecode(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add(tc.body)
	}
	f.Add(`{"flavors":[{"name":"a","offerId":"o","x":{"y":[1,{"z":2}]}}]}`)
	f.Add(`{"tenantId":"acme","flavors":[[],{"name":1}],"agent":null}`)
	f.Add(`{"fl\u0061vors":[{"a.b":1}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var in api.PoolCreateRequest
		err := bus.Decode([]byte(body), &in)
		if err == nil {
			return
		}
		ce, ok := err.(*api.ComputeError)
		if !ok || ce.Code != api.CodeInvalidInput {
			t.Fatalf("Decode(%q) = %v, want INVALID_INPUT", body, err)
		}
		if ce.Details.Path == nil {
			t.Fatalf("Decode(%q): no details.path in %+v", body, ce)
		}
		path := ce.Path()
		if path == "" || path == "." {
			return
		}
		var doc any
		if err := json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&doc); err != nil {
			t.Fatalf("Decode(%q) names path %q in a body that does not parse: %v", body, path, err)
		}
		paths := map[string]bool{}
		documentPaths(doc, "", paths)
		if !paths[path] {
			t.Fatalf("Decode(%q): path %q is not in the document (%v)", body, path, paths)
		}
	})
}

// documentPaths adds the path of every value below v ("a.b", "a[0]") to paths.
func documentPaths(v any, path string, paths map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			paths[p] = true
			documentPaths(child, p, paths)
		}
	case []any:
		for i, child := range x {
			p := fmt.Sprintf("%s[%d]", path, i)
			paths[p] = true
			documentPaths(child, p, paths)
		}
	}
}
