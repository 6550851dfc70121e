package accounts

import (
	"encoding/json"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// FuzzCheckPoolUpdate: a pools.update body, decoded as the service does,
// never makes checkPoolUpdate panic; a refusal is INVALID_INPUT naming a
// field of the request (id, sizes.*, rollout.*, template.*).
func FuzzCheckPoolUpdate(f *testing.F) {
	for _, s := range []string{
		`{"id":"pool_01jd3x5y7z9a1b2c3d4e5f6g7h","sizes":{"small":3}}`,
		`{"id":"pool_01jd3x5y7z9a1b2c3d4e5f6g7h","sizes":{"small":-1}}`,
		`{"id":"pool_01jd3x5y7z9a1b2c3d4e5f6g7h","rollout":{"maxSurge":0,"maxUnavailable":0}}`,
		`{"id":"pool_01jd3x5y7z9a1b2c3d4e5f6g7h","template":{"image":"debian-12","labels":{"app":"web","a/b":"c"}}}`,
		`{"id":"pool_01jd3x5y7z9a1b2c3d4e5f6g7h","template":{"labels":{"compute.pool/id":"x","":"y"}}}`,
		`{"id":"x"}`,
		`{}`,
	} {
		f.Add(s)
	}
	prefixes := []string{"id", "sizes.", "rollout.", "template."}
	f.Fuzz(func(t *testing.T, body string) {
		var in api.PoolUpdateRequest
		if json.Unmarshal([]byte(body), &in) != nil {
			return
		}
		err := checkPoolUpdate(&in)
		if err == nil {
			return
		}
		ce := api.AsComputeError(err)
		if ce.Code != api.CodeInvalidInput {
			t.Fatalf("refused with %s, want INVALID_INPUT", ce.Code)
		}
		ok := false
		for _, p := range prefixes {
			ok = ok || strings.HasPrefix(ce.Path(), p)
		}
		if !ok {
			t.Fatalf("refusal names path %q, not a field of the request", ce.Path())
		}
	})
}
