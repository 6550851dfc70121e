package provider_test

import (
	"regexp"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/provider"
)

func TestHostnameLabel(t *testing.T) {
	long := strings.Repeat("a", 70)
	cases := []struct{ in, want string }{
		{"inst_01JDXYZ", "inst-01jdxyz"},
		{"inst_01JDABC", "inst-01jdabc"},
		{"web-1", "web-1"},
		{"My Server.example.com", "my-server-example-com"},
		{"  web server #1  ", "web-server-1"},
		{"__a__b__", "a-b"},
		{"--x--", "x"},
		{"ünïcode", "n-code"},
		{"___", "fallback"},
		{"", "fallback"},
		{strings.Repeat("b", 63), strings.Repeat("b", 63)},
	}
	for _, c := range cases {
		if got := provider.HostnameLabel(c.in, "fallback"); got != c.want {
			t.Errorf("HostnameLabel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := provider.HostnameLabel(long, "x"); !regexp.MustCompile(`^a{54}-[0-9a-f]{8}$`).MatchString(got) {
		t.Errorf("HostnameLabel(70 a) = %q, want 54 a, a hyphen and 8 hex digits", got)
	}
	if provider.HostnameLabel(long, "x") == provider.HostnameLabel(long+"b", "x") {
		t.Error("two long names that differ past the cut share a label")
	}
	if got := provider.HostnameLabel(strings.Repeat("b", 80), "x"); len(got) != provider.MaxHostnameLabelLength || !hostnameLabel.MatchString(got) {
		t.Errorf("HostnameLabel(80 b) = %q, want a %d-character hostname label", got, provider.MaxHostnameLabelLength)
	}
}

var hostnameLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func FuzzHostnameLabel(f *testing.F) {
	for _, seed := range []string{"inst_01jdxyz", "", "-", strings.Repeat("x_", 80), "Ä.B..c", "\xff\xfe"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := provider.HostnameLabel(in, "server")
		if !hostnameLabel.MatchString(out) {
			t.Fatalf("HostnameLabel(%q) = %q is not a hostname label", in, out)
		}
		if provider.HostnameLabel(out, "server") != out {
			t.Fatalf("HostnameLabel is not stable on its output %q", out)
		}
	})
}
