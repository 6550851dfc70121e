// Package egress limits the addresses a provider's HTTP client may connect
// to, so a tenant who sets an account's API URL (a Proxmox cluster's) cannot
// make the provider service reach hosts the operator did not mean it to:
// cloud metadata endpoints, the deployment's own services (server-side
// request forgery). The check runs on the address actually dialled, after
// DNS resolution, so a name that resolves to a forbidden address (DNS
// rebinding included) is refused too.
package egress

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// AlwaysDenied are the networks no policy allows: link-local addresses,
// where cloud metadata services answer (169.254.169.254), and the
// unspecified addresses.
var AlwaysDenied = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("0.0.0.0/32"),
	netip.MustParsePrefix("::/128"),
}

// Policy decides which addresses may be dialled: none of AlwaysDenied and,
// when Allowed is not empty, only addresses inside one of its prefixes.
// The zero Policy allows everything but AlwaysDenied.
type Policy struct {
	Allowed []netip.Prefix
}

// Parse reads a comma-separated list of CIDR prefixes or single IP
// addresses ("10.20.0.0/16, 192.0.2.7, fd00::/8"); an empty list allows
// every address outside AlwaysDenied. Errors name the entry that is
// neither.
func Parse(list string) (Policy, error) {
	var p Policy
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(entry)
		if err != nil {
			addr, aerr := netip.ParseAddr(entry)
			if aerr != nil {
				return Policy{}, fmt.Errorf("egress: %q is neither a CIDR prefix nor an IP address", entry)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		p.Allowed = append(p.Allowed, prefix.Masked())
	}
	return p, nil
}

// DeniedError is the error of a dial the policy refused.
type DeniedError struct {
	// Address is the dialled address ("169.254.169.254:443").
	Address string
}

// Error implements error.
func (e *DeniedError) Error() string {
	return fmt.Sprintf("connecting to %s is not allowed by this deployment's egress policy", e.Address)
}

// Allows reports whether addr may be dialled.
func (p Policy) Allows(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, d := range AlwaysDenied {
		if d.Contains(addr) {
			return false
		}
	}
	if len(p.Allowed) == 0 {
		return true
	}
	for _, a := range p.Allowed {
		if a.Contains(addr) {
			return true
		}
	}
	return false
}

// control is a net.Dialer Control function applying the policy to the
// resolved address ("host:port") about to be connected.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !p.Allows(ap.Addr()) {
		return &DeniedError{Address: address}
	}
	return nil
}

// Transport returns a clone of base (http.DefaultTransport when nil) whose
// connections are dialled under the policy; a refused dial fails the
// request with an error wrapping *DeniedError. A proxy configured on base
// is dropped: the policy must see the API's own address.
func (p Policy) Transport(base *http.Transport) *http.Transport {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	tr := base.Clone()
	tr.Proxy = nil
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.control}
	tr.DialContext = dialer.DialContext
	return tr
}
