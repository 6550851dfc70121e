package api

import (
	"net/netip"
	"testing"
)

func TestAddressRangeParse(t *testing.T) {
	cases := []struct {
		name        string
		r           AddressRange
		path        string
		size        int
		first, last string
	}{
		{"a /24", AddressRange{CIDR: "192.168.10.0/24", Gateway: "192.168.10.1"}, "", 253, "192.168.10.1", "192.168.10.254"},
		{"bounded", AddressRange{CIDR: "10.0.0.0/16", Gateway: "10.0.0.1", First: "10.0.1.10", Last: "10.0.1.19"}, "", 10,
			"10.0.1.10", "10.0.1.19"},
		{"gateway inside the span", AddressRange{CIDR: "10.0.0.0/29", Gateway: "10.0.0.3"}, "", 5, "10.0.0.1", "10.0.0.6"},
		{"a /30", AddressRange{CIDR: "10.0.0.0/30", Gateway: "10.0.0.1"}, "", 1, "10.0.0.1", "10.0.0.2"},
		{"not a cidr", AddressRange{CIDR: "10.0.0.0", Gateway: "10.0.0.1"}, "r.cidr", 0, "", ""},
		{"ipv6", AddressRange{CIDR: "fd00::/64", Gateway: "fd00::1"}, "r.cidr", 0, "", ""},
		{"a /31", AddressRange{CIDR: "10.0.0.0/31", Gateway: "10.0.0.1"}, "r.cidr", 0, "", ""},
		{"host bits", AddressRange{CIDR: "10.0.0.5/24", Gateway: "10.0.0.1"}, "r.cidr", 0, "", ""},
		{"gateway outside", AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.1.1"}, "r.gateway", 0, "", ""},
		{"gateway the broadcast", AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.0.255"}, "r.gateway", 0, "", ""},
		{"first outside", AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", First: "10.0.0.0"}, "r.first", 0, "", ""},
		{"last outside", AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Last: "10.0.2.3"}, "r.last", 0, "", ""},
		{"first after last", AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", First: "10.0.0.9", Last: "10.0.0.8"}, "r.first", 0, "", ""},
		{"bad dns", AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", DNS: []string{"1.1.1.1", "dns"}}, "r.dns[1]", 0, "", ""},
		{"four dns", AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", DNS: []string{"1.1.1.1", "1.0.0.1", "8.8.8.8", "9.9.9.9"}},
			"r.dns", 0, "", ""},
	}
	for _, tc := range cases {
		s, err := tc.r.Parse("r")
		if tc.path != "" {
			if ce := AsComputeError(err); ce.Code != CodeInvalidInput || ce.Path() != tc.path {
				t.Errorf("%s: %v, want INVALID_INPUT %s", tc.name, err, tc.path)
			}
			continue
		}
		if err != nil || s.Size() != tc.size || s.First.String() != tc.first || s.Last.String() != tc.last {
			t.Errorf("%s: %+v size %d, %v; want size %d, %s to %s", tc.name, s, s.Size(), err, tc.size, tc.first, tc.last)
			continue
		}
		seen := map[netip.Addr]bool{}
		for i := range s.Size() {
			a := s.At(i)
			if seen[a] || a == s.Gateway || !s.Contains(a) {
				t.Errorf("%s: At(%d) = %s (seen %v, gateway %s)", tc.name, i, a, seen[a], s.Gateway)
			}
			seen[a] = true
		}
	}
	a, _ := (&AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", First: "10.0.0.10", Last: "10.0.0.20"}).Parse("a")
	b, _ := (&AddressRange{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", First: "10.0.0.21", Last: "10.0.0.30"}).Parse("b")
	c, _ := (&AddressRange{CIDR: "10.0.0.16/28", Gateway: "10.0.0.17"}).Parse("c")
	if a.Overlaps(b) || !a.Overlaps(c) || !c.Overlaps(a) {
		t.Errorf("overlaps: a-b %v, a-c %v", a.Overlaps(b), a.Overlaps(c))
	}
	if st := a.Static(a.At(0)); st.Address != "10.0.0.10/24" || st.Gateway != "10.0.0.1" {
		t.Errorf("static = %+v", st)
	}
}

// FuzzAddressRangeParse: any range either is refused naming a field of it,
// or hands out Size distinct addresses inside its subnet, never the
// gateway.
func FuzzAddressRangeParse(f *testing.F) {
	f.Add("192.168.10.0/24", "192.168.10.1", "", "")
	f.Add("10.0.0.0/29", "10.0.0.3", "10.0.0.2", "10.0.0.6")
	f.Add("10.0.0.0/8", "10.255.255.254", "", "")
	f.Fuzz(func(t *testing.T, cidr, gw, first, last string) {
		r := AddressRange{CIDR: cidr, Gateway: gw, First: first, Last: last}
		s, err := r.Parse("r")
		if err != nil {
			if ce := AsComputeError(err); ce.Code != CodeInvalidInput || len(ce.Path()) < 3 {
				t.Fatalf("%+v: %v", r, err)
			}
			return
		}
		n := s.Size()
		if n < 0 || n > 1<<24 {
			t.Fatalf("%+v: size %d", r, n)
		}
		for _, i := range []int{0, n / 2, n - 1} {
			if n == 0 {
				break
			}
			if a := s.At(i); a == s.Gateway || !s.Prefix.Contains(a) || !s.Contains(a) {
				t.Fatalf("%+v: At(%d) = %s", r, i, a)
			}
		}
	})
}
