package egress

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{" , ", nil, ""},
		{"10.20.0.0/16", []string{"10.20.0.0/16"}, ""},
		{"10.20.3.4/16, 192.0.2.7 ,fd00::/8", []string{"10.20.0.0/16", "192.0.2.7/32", "fd00::/8"}, ""},
		{"::1", []string{"::1/128"}, ""},
		{"10.0.0.0/33", nil, `"10.0.0.0/33"`},
		{"pve.example.net", nil, `"pve.example.net"`},
		{"10.0.0.0/8,nope", nil, `"nope"`},
	}
	for _, c := range cases {
		p, err := Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) error %v, want one naming %s", c.in, err, c.err)
			}
			continue
		}
		var got []string
		for _, a := range p.Allowed {
			got = append(got, a.String())
		}
		if err != nil || strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestAllows(t *testing.T) {
	open := Policy{}
	private, err := Parse("10.0.0.0/8, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		policy Policy
		addr   string
		want   bool
	}{
		{open, "203.0.113.9", true},
		{open, "127.0.0.1", true},
		{open, "169.254.169.254", false}, // cloud metadata
		{open, "::ffff:169.254.169.254", false},
		{open, "fe80::1", false},
		{open, "0.0.0.0", false},
		{open, "::", false},
		{private, "10.1.2.3", true},
		{private, "127.0.0.1", true},
		{private, "127.0.0.2", false},
		{private, "203.0.113.9", false},
		{private, "::ffff:10.1.2.3", true},
	}
	for _, c := range cases {
		if got := c.policy.Allows(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("%v allows %s = %v, want %v", c.policy.Allowed, c.addr, got, c.want)
		}
	}
}

// The check runs on the dialled address, after resolution: a host name
// resolving to an address outside the policy is refused too.
func TestTransportChecksTheDialledAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]

	get := func(p Policy, url string) error {
		c := &http.Client{Transport: p.Transport(nil)}
		resp, err := c.Get(url)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	loopback, _ := Parse("127.0.0.1, ::1")
	if err := get(loopback, srv.URL); err != nil {
		t.Fatalf("an allowed address: %v", err)
	}
	elsewhere, _ := Parse("10.0.0.0/8")
	for _, url := range []string{srv.URL, "http://localhost" + port} {
		var denied *DeniedError
		if err := get(elsewhere, url); !errors.As(err, &denied) {
			t.Errorf("GET %s outside the policy: %v, want a *DeniedError", url, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "10.0.0.0/8", "10.1.2.3, ::1", "fd00::/8,192.0.2.1/32", "x", "1.2.3.4/99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		for _, a := range p.Allowed {
			if !a.IsValid() || a != a.Masked() {
				t.Fatalf("Parse(%q) gave prefix %v", s, a)
			}
			if !p.Allows(a.Addr()) && !deniedAlways(a.Addr()) {
				t.Fatalf("Parse(%q) allows %v but not its first address", s, a)
			}
		}
	})
}

func deniedAlways(addr netip.Addr) bool {
	for _, d := range AlwaysDenied {
		if d.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}
