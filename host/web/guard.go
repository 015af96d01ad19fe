package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// hostResolver is the part of *net.Resolver the guard needs; tests inject one that maps
// public-looking names to loopback.
type hostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// allowList is the parsed form of fetch.allow_private_hosts.
type allowList struct {
	hosts    map[string]bool // exact host names, lower case, no trailing dot
	suffixes []string        // ".corp.example" from "*.corp.example" or ".corp.example"
	prefixes []netip.Prefix  // CIDRs, and single IPs as /32 or /128
}

// parseAllowList reads the comma-separated setting. An entry that is neither a CIDR, an
// IP nor a host name is an error, so a typo is not silently ignored.
func parseAllowList(v string) (*allowList, error) {
	al := &allowList{hosts: map[string]bool{}}
	for _, raw := range strings.Split(v, ",") {
		e := strings.ToLower(strings.TrimSpace(raw))
		if e == "" {
			continue
		}
		e = strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")
		if p, err := netip.ParsePrefix(e); err == nil {
			if p.Addr().Is4In6() {
				bits := p.Bits() - 96
				if bits < 0 {
					return nil, fmt.Errorf("%q: an IPv4-mapped prefix needs at least /96", raw)
				}
				p = netip.PrefixFrom(p.Addr().Unmap(), bits)
			}
			al.prefixes = append(al.prefixes, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			a = a.Unmap().WithZone("")
			al.prefixes = append(al.prefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		e = strings.TrimSuffix(e, ".")
		if rest, ok := strings.CutPrefix(e, "*."); ok {
			if !validHostName(rest) {
				return nil, fmt.Errorf("%q is not a host name, IP address or CIDR", strings.TrimSpace(raw))
			}
			al.suffixes = append(al.suffixes, "."+rest)
			continue
		}
		if rest, ok := strings.CutPrefix(e, "."); ok && validHostName(rest) {
			al.suffixes = append(al.suffixes, e)
			continue
		}
		if !validHostName(e) {
			return nil, fmt.Errorf("%q is not a host name, IP address or CIDR (no ports or schemes)", strings.TrimSpace(raw))
		}
		al.hosts[e] = true
	}
	return al, nil
}

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func (al *allowList) hostAllowed(host string) bool {
	if al == nil {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if al.hosts[host] {
		return true
	}
	for _, s := range al.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

func (al *allowList) ipAllowed(a netip.Addr) bool {
	if al == nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, p := range al.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

var (
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork  = netip.MustParsePrefix("0.0.0.0/8")
	ietfProto    = netip.MustParsePrefix("192.0.0.0/24")
	benchmarking = netip.MustParsePrefix("198.18.0.0/15")
	reserved4    = netip.MustParsePrefix("240.0.0.0/4") // includes 255.255.255.255
	siteLocal6   = netip.MustParsePrefix("fec0::/10")
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	teredo       = netip.MustParsePrefix("2001::/32")
	ipv4Compat   = netip.MustParsePrefix("::/96")

	metadataIPs = map[netip.Addr]bool{
		netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack…
		netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
		netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	}
	// Names that reach a metadata service without going through a blocked-looking IP
	// in every environment (GCP answers them from its own resolver).
	metadataHosts = map[string]bool{
		"metadata.google.internal": true,
		"metadata.goog":            true,
		"metadata":                 true,
	}
)

// blockedReason says why an address must not be dialled, or "" when it may. Addresses
// that embed an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are judged by
// the IPv4 address too, since a gateway would forward to it.
func blockedReason(a netip.Addr) string {
	a = a.WithZone("")
	if a.Is4In6() {
		a = a.Unmap()
	}
	if metadataIPs[a] {
		return "cloud metadata address"
	}
	switch {
	case a.IsLoopback():
		return "loopback address"
	case a.IsUnspecified():
		return "unspecified address"
	case a.IsPrivate():
		return "private address"
	case a.IsLinkLocalUnicast():
		return "link-local address"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast address"
	}
	if a.Is4() {
		switch {
		case cgnat.Contains(a):
			return "carrier-grade NAT (shared) address"
		case thisNetwork.Contains(a):
			return "\"this network\" address"
		case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			return "broadcast address"
		case reserved4.Contains(a):
			return "reserved address"
		case ietfProto.Contains(a), benchmarking.Contains(a):
			return "special-purpose address"
		}
		return ""
	}
	if siteLocal6.Contains(a) {
		return "site-local address"
	}
	if nat64Local.Contains(a) {
		return "local-use NAT64 address"
	}
	b := a.As16()
	var embedded netip.Addr
	switch {
	case nat64.Contains(a), ipv4Compat.Contains(a):
		embedded = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case sixToFour.Contains(a):
		embedded = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case teredo.Contains(a):
		embedded = netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	}
	if embedded.IsValid() {
		if r := blockedReason(embedded); r != "" {
			return r + " (embedded in " + a.String() + ")"
		}
	}
	return ""
}

// BlockedError is a refusal by the SSRF guard. It travels up through the HTTP client's
// error wrapping and becomes PERMISSION_DENIED.
type BlockedError struct {
	Host   string // the host name of the URL ("" when the URL held an IP)
	Addr   string // the address that was refused ("" when refused by name)
	Reason string
}

func (e *BlockedError) Error() string {
	var what string
	switch {
	case e.Addr != "" && e.Host != "" && e.Host != e.Addr:
		what = fmt.Sprintf("%s (%s, resolved from %q)", e.Addr, e.Reason, e.Host)
	case e.Addr != "":
		what = fmt.Sprintf("%s (%s)", e.Addr, e.Reason)
	default:
		what = fmt.Sprintf("%q (%s)", e.Host, e.Reason)
	}
	allow := e.Addr
	if allow == "" {
		allow = e.Host
	}
	return fmt.Sprintf("refused to connect to %s: loopback, private, link-local and metadata addresses are blocked so that a fetched page cannot reach your network; to allow it, add %q (or a CIDR containing it%s) to the setting %s, e.g. `ferry config set %s %s`",
		what, allow, orHostName(e), SettingAllowPrivateHosts, SettingAllowPrivateHosts, allow)
}

func orHostName(e *BlockedError) string {
	if e.Host != "" && e.Addr != "" && e.Host != e.Addr {
		return fmt.Sprintf(", or the host name %q", e.Host)
	}
	return ""
}

// guardedDialer resolves names itself and dials the checked IP literal, so that what
// was checked is exactly what is connected to: a DNS answer that changes between the
// check and the connect (rebinding) never reaches the socket.
type guardedDialer struct {
	resolver hostResolver
	allow    *allowList
	dialer   net.Dialer
}

func newGuardedDialer(r hostResolver, allow *allowList) *guardedDialer {
	g := &guardedDialer{resolver: r, allow: allow}
	g.dialer.Control = g.control
	return g
}

// control is the last line of defence: it sees the address the socket is about to
// connect to, whatever path led there.
func (g *guardedDialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Addr: address, Reason: "unparseable address"}
	}
	if r := blockedReason(ap.Addr()); r != "" && !g.allow.ipAllowed(ap.Addr()) {
		return &BlockedError{Addr: ap.Addr().Unmap().String(), Reason: r}
	}
	return nil
}

func (g *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	lower := strings.TrimSuffix(strings.ToLower(host), ".")
	byName := g.allow.hostAllowed(lower)
	if metadataHosts[lower] && !byName {
		return nil, &BlockedError{Host: host, Reason: "cloud metadata host name"}
	}

	var ips []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{a}
		host = ""
	} else {
		ips, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("no addresses found for %q", host)
		}
	}

	var firstBlock *BlockedError
	var lastErr error
	for _, ip := range ips {
		ip = ip.Unmap().WithZone("")
		if r := blockedReason(ip); r != "" && !byName && !g.allow.ipAllowed(ip) {
			if firstBlock == nil {
				firstBlock = &BlockedError{Host: host, Addr: ip.String(), Reason: r}
			}
			continue
		}
		d := g.dialer
		if byName {
			// Allowed by name: the per-socket re-check would refuse the private
			// address the name legitimately points to.
			d.Control = nil
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
		var be *BlockedError
		if errors.As(err, &be) {
			return nil, err
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return nil, firstBlock
}
