package api

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Bounds of an AddressRange: an IPv4 subnet of MinRangePrefix to
// MaxRangePrefix bits (a /8 to a /30), at most MaxRangeDNS name servers.
const (
	MinRangePrefix = 8
	MaxRangePrefix = 30
	MaxRangeDNS    = 3
)

// AddressSpan is a parsed AddressRange: the subnet, the gateway, the
// name servers and the span handed out, First to Last (both inclusive,
// never the subnet's network or broadcast address).
type AddressSpan struct {
	Prefix      netip.Prefix
	Gateway     netip.Addr
	DNS         []netip.Addr
	First, Last netip.Addr
}

// Parse checks r and returns its span. Errors: INVALID_INPUT naming
// path + ".cidr" (not an IPv4 subnet of MinRangePrefix to MaxRangePrefix
// bits, or host bits set), ".gateway" (not an address inside the subnet
// that can be a host), ".first" / ".last" (outside the subnet's host
// addresses, or first after last), ".dns[i]" (not an IP address; more
// than MaxRangeDNS).
func (r *AddressRange) Parse(path string) (AddressSpan, error) {
	var s AddressSpan
	p, err := netip.ParsePrefix(r.CIDR)
	switch {
	case err != nil || !p.Addr().Is4():
		return s, InvalidInput(path+".cidr", "cidr must be an IPv4 subnet such as 192.168.10.0/24")
	case p.Bits() < MinRangePrefix || p.Bits() > MaxRangePrefix:
		return s, InvalidInput(path+".cidr", "cidr must be a /%d to a /%d", MinRangePrefix, MaxRangePrefix)
	case p.Masked() != p:
		return s, InvalidInput(path+".cidr", "cidr %s has host bits set: the subnet is %s", r.CIDR, p.Masked())
	}
	s.Prefix = p
	lo, hi := u32(p.Addr())+1, u32(p.Addr())|(1<<(32-p.Bits())-1)-1 // no network, no broadcast address
	host := func(field, v string) (netip.Addr, error) {
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is4() || u32(a) < lo || u32(a) > hi {
			return a, InvalidInput(path+"."+field, "%s %q must be a host address inside %s", field, v, p)
		}
		return a, nil
	}
	if s.Gateway, err = host("gateway", r.Gateway); err != nil {
		return s, err
	}
	s.First, s.Last = addr4(lo), addr4(hi)
	if r.First != "" {
		if s.First, err = host("first", r.First); err != nil {
			return s, err
		}
	}
	if r.Last != "" {
		if s.Last, err = host("last", r.Last); err != nil {
			return s, err
		}
	}
	if u32(s.First) > u32(s.Last) {
		return s, InvalidInput(path+".first", "first %s is after last %s", s.First, s.Last)
	}
	if len(r.DNS) > MaxRangeDNS {
		return s, InvalidInput(path+".dns", "at most %d name servers", MaxRangeDNS)
	}
	for i, d := range r.DNS {
		a, err := netip.ParseAddr(d)
		if err != nil || a.Zone() != "" {
			return s, InvalidInput(fmt.Sprintf("%s.dns[%d]", path, i), "%q is not an IP address", d)
		}
		s.DNS = append(s.DNS, a)
	}
	return s, nil
}

// Size is how many addresses the span hands out: First to Last without
// the gateway.
func (s AddressSpan) Size() int {
	n := int(u32(s.Last) - u32(s.First) + 1)
	if s.Contains(s.Gateway) {
		n--
	}
	return n
}

// Contains reports whether a is between First and Last.
func (s AddressSpan) Contains(a netip.Addr) bool {
	return a.Is4() && u32(a) >= u32(s.First) && u32(a) <= u32(s.Last)
}

// At is the i-th address handed out (0 ≤ i < Size): First to Last in
// order, the gateway skipped.
func (s AddressSpan) At(i int) netip.Addr {
	a := u32(s.First) + uint32(i)
	if s.Contains(s.Gateway) && a >= u32(s.Gateway) {
		a++
	}
	return addr4(a)
}

// Overlaps reports whether s and o hand out a common address (their
// First–Last spans intersect).
func (s AddressSpan) Overlaps(o AddressSpan) bool {
	return u32(s.First) <= u32(o.Last) && u32(o.First) <= u32(s.Last)
}

// Static is a as the StaticAddress of a machine: in CIDR notation with
// the subnet's prefix length, the gateway and the name servers.
func (s AddressSpan) Static(a netip.Addr) StaticAddress {
	out := StaticAddress{Address: netip.PrefixFrom(a, s.Prefix.Bits()).String(), Gateway: s.Gateway.String()}
	for _, d := range s.DNS {
		out.DNS = append(out.DNS, d.String())
	}
	return out
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func addr4(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}
