package provider_test

import (
	"testing"

	"better-compute.io/compute/pkg/provider"
)

func TestHeaderSafe(t *testing.T) {
	cases := map[string]bool{
		"hz-test-token-1f2e3d":                 true,
		"00000000-0000-4000-8000-00000000e301": true,
		"!~":                                   true,
		"":                                     false,
		"two words":                            false,
		"tab\there":                            false,
		"line\n":                               false,
		"del\x7f":                              false,
		"ümlaut":                               false,
	}
	for in, want := range cases {
		if got := provider.HeaderSafe(in); got != want {
			t.Errorf("HeaderSafe(%q) = %v, want %v", in, got, want)
		}
	}
}
