package api

import "testing"

// FuzzParseSecretRef: ParseSecretRef never panics, refuses only with
// INVALID_INPUT, and a parsed reference round-trips through String() (and
// parses again to the same value).
func FuzzParseSecretRef(f *testing.F) {
	for _, s := range []string{
		"secret://acme/sec_01jd0000000000000000000000",
		"secret://acme/sec_01JD0000000000000000000000",
		"secret://acme/other/sec_01jd0000000000000000000000",
		"env://HCLOUD_TOKEN",
		"env://1BAD",
		"vault://kv/team/hetzner#token",
		"vault://kv/a/../b#f",
		"vault://kv/a#b#c",
		"http://example.com",
		"",
		"://",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseSecretRef(s)
		if err != nil {
			if CodeOf(err) != CodeInvalidInput {
				t.Fatalf("refused with %s, want INVALID_INPUT", CodeOf(err))
			}
			return
		}
		if got := r.String(); got != s {
			t.Fatalf("String() = %q, want the parsed input %q", got, s)
		}
		again, err := ParseSecretRef(r.String())
		if err != nil || again != r {
			t.Fatalf("re-parse of %q: %+v, %v; want %+v", r.String(), again, err, r)
		}
	})
}
