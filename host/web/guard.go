package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// hostResolver is the part of *net.Resolver the guard needs; tests inject one that maps
// public-looking names to loopback.
type hostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// AllowList is a parsed list of private destinations that may be reached although
// they are loopback, private, link-local or metadata addresses: the syntax of
// fetch.allow_private_hosts, which other settings of the same kind reuse. Entries
// are comma-separated:
//
//	intranet.example        a host name, any port
//	*.corp.example          every name below corp.example (also ".corp.example")
//	127.0.0.1, [::1], ::1   an address, any port
//	10.0.0.0/8, fd00::/8    every address of a CIDR
//	intranet.example:8080   any of the above with a port: that port only
//	127.0.0.1:8080, [::1]:8080, 10.0.0.0/8:8080, [fd00::/8]:8080
//
// An entry that is none of these is an error, so that a typo is not silently
// ignored. The zero value and nil allow nothing.
type AllowList struct {
	entries []allowEntry
}

type allowEntry struct {
	host   string       // exact host name, lower case, no trailing dot
	suffix string       // ".corp.example"
	prefix netip.Prefix // a CIDR, or a single address as /32 or /128
	port   uint16       // 0: any port
}

// ParseAllowList reads a comma-separated list.
func ParseAllowList(v string) (*AllowList, error) {
	al := &AllowList{}
	for _, raw := range strings.Split(v, ",") {
		e := strings.ToLower(strings.TrimSpace(raw))
		if e == "" {
			continue
		}
		entry, err := parseAllowEntry(e)
		if err != nil {
			return nil, fmt.Errorf("%q %s", strings.TrimSpace(raw), err)
		}
		al.entries = append(al.entries, entry)
	}
	return al, nil
}

func parseAllowEntry(e string) (allowEntry, error) {
	if strings.Contains(e, "://") || strings.ContainsAny(e, "/?#@") && !looksLikeCIDR(e) {
		return allowEntry{}, errors.New("is not a host name, IP address or CIDR with an optional :port (no schemes, paths or user names)")
	}
	// An address or a CIDR, bare: "::1" and "fd00::/8" hold colons that are no port.
	if p, err := parsePrefix(e); err == nil {
		return allowEntry{prefix: p}, nil
	}
	// "[::1]" or "[fd00::/8]" without a port.
	if inner, ok := strings.CutPrefix(e, "["); ok && strings.HasSuffix(inner, "]") {
		if p, err := parsePrefix(strings.TrimSuffix(inner, "]")); err == nil {
			return allowEntry{prefix: p}, nil
		}
		return allowEntry{}, errors.New("is not an IP address or CIDR in brackets")
	}
	name, port := e, uint16(0)
	if i := strings.LastIndex(e, ":"); i >= 0 {
		n, err := strconv.ParseUint(e[i+1:], 10, 16)
		if err != nil || n == 0 {
			return allowEntry{}, fmt.Errorf("has port %q, not a number from 1 to 65535", e[i+1:])
		}
		name, port = e[:i], uint16(n)
		if inner, ok := strings.CutPrefix(name, "["); ok {
			p, err := parsePrefix(strings.TrimSuffix(inner, "]"))
			if !strings.HasSuffix(inner, "]") || err != nil {
				return allowEntry{}, errors.New("has brackets around something that is not an IP address or CIDR")
			}
			return allowEntry{prefix: p, port: port}, nil
		}
		if p, err := parsePrefix(name); err == nil {
			return allowEntry{prefix: p, port: port}, nil
		}
		if strings.Contains(name, ":") {
			return allowEntry{}, errors.New("is not a host name, IP address or CIDR: write an IPv6 address with a port in brackets, like [::1]:8080")
		}
	}
	name = strings.TrimSuffix(name, ".")
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		name = "." + rest
	}
	if rest, ok := strings.CutPrefix(name, "."); ok {
		if !validHostName(rest) {
			return allowEntry{}, errors.New("is not a host name, IP address or CIDR")
		}
		return allowEntry{suffix: name, port: port}, nil
	}
	if !validHostName(name) {
		return allowEntry{}, errors.New("is not a host name, IP address or CIDR with an optional :port (no schemes or paths)")
	}
	return allowEntry{host: name, port: port}, nil
}

func looksLikeCIDR(e string) bool {
	_, err := parsePrefix(strings.Trim(e, "[]"))
	if err == nil {
		return true
	}
	if i := strings.LastIndex(e, ":"); i >= 0 {
		_, err = parsePrefix(strings.Trim(e[:i], "[]"))
	}
	return err == nil
}

// parsePrefix reads a CIDR or a single address (as its /32 or /128), IPv4-mapped
// IPv6 folded to IPv4.
func parsePrefix(e string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(e); err == nil {
		if p.Addr().Is4In6() {
			bits := p.Bits() - 96
			if bits < 0 {
				return netip.Prefix{}, errors.New("an IPv4-mapped prefix needs at least /96")
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), bits)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(e)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
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

// AllowsHost reports whether a host name (not an address) is allowed at port.
func (al *AllowList) AllowsHost(host string, port uint16) bool {
	if al == nil {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, e := range al.entries {
		if e.port != 0 && e.port != port {
			continue
		}
		if (e.host != "" && e.host == host) || (e.suffix != "" && strings.HasSuffix(host, e.suffix)) {
			return true
		}
	}
	return false
}

// AllowsAddr reports whether an address is allowed at port.
func (al *AllowList) AllowsAddr(a netip.Addr, port uint16) bool {
	if al == nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, e := range al.entries {
		if e.prefix.IsValid() && (e.port == 0 || e.port == port) && e.prefix.Contains(a) {
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

// BlockedReason says why an address must not be reached unless allowed (loopback,
// private, link-local, metadata, …), or "" when it is public. Addresses
// that embed an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are judged by
// the IPv4 address too, since a gateway would forward to it.
func BlockedReason(a netip.Addr) string {
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
		if r := BlockedReason(embedded); r != "" {
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
	Port   uint16
	Reason string
	// Redirected: the destination is allowed, but a redirect led to it from a fetch
	// that started at a public host.
	Redirected bool
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
	if e.Redirected {
		return fmt.Sprintf("refused to follow a redirect to %s: the fetch started at a public host, and an allowed private host is reached by a redirect only from a private one (a public page must not steer the fetch into your network); fetch the private URL directly if you mean it",
			what)
	}
	allow := e.Addr
	if allow == "" {
		allow = e.Host
	}
	if strings.Contains(allow, ":") {
		allow = "[" + allow + "]"
	}
	withPort := ""
	if e.Port != 0 {
		withPort = fmt.Sprintf(" (%s:%d for that port only)", allow, e.Port)
	}
	return fmt.Sprintf("refused to connect to %s: loopback, private, link-local and metadata addresses are blocked so that a fetched page cannot reach your network; to allow it, add %q%s (or a CIDR containing it%s) to the setting %s, e.g. `ferry config set %s %s`",
		what, allow, withPort, orHostName(e), SettingAllowPrivateHosts, SettingAllowPrivateHosts, allow)
}

func orHostName(e *BlockedError) string {
	if e.Host != "" && e.Addr != "" && e.Host != e.Addr {
		return fmt.Sprintf(", or the host name %q", e.Host)
	}
	return ""
}

// guardedDialer resolves names itself and dials the checked IP literal, so that what
// was checked is exactly what is connected to: a DNS answer that changes between the
// check and the connect (rebinding) never reaches the socket. A public chain's
// dialer (publicChain) ignores the allow list and says why when it would have
// allowed the destination.
type guardedDialer struct {
	resolver    hostResolver
	reason      func(netip.Addr) string // BlockedReason; tests make one loopback address "public"
	allow       *AllowList
	publicChain bool
	dialer      net.Dialer
}

func newGuardedDialer(r hostResolver, reason func(netip.Addr) string, allow *AllowList, publicChain bool) *guardedDialer {
	if reason == nil {
		reason = BlockedReason
	}
	g := &guardedDialer{resolver: r, reason: reason, allow: allow, publicChain: publicChain}
	g.dialer.Control = g.control
	return g
}

// allowsAddr and allowsHost are the allow list as this dialer applies it.
func (g *guardedDialer) allowsAddr(a netip.Addr, port uint16) bool {
	return !g.publicChain && g.allow.AllowsAddr(a, port)
}

func (g *guardedDialer) allowsHost(h string, port uint16) bool {
	return !g.publicChain && g.allow.AllowsHost(h, port)
}

func (g *guardedDialer) blocked(host string, a netip.Addr, port uint16, reason string) *BlockedError {
	addr := ""
	if a.IsValid() {
		addr = a.Unmap().String()
	}
	redirected := g.publicChain && (g.allow.AllowsHost(host, port) || (a.IsValid() && g.allow.AllowsAddr(a, port)))
	return &BlockedError{Host: host, Addr: addr, Port: port, Reason: reason, Redirected: redirected}
}

// control is the last line of defence: it sees the address the socket is about to
// connect to, whatever path led there.
func (g *guardedDialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Addr: address, Reason: "unparseable address"}
	}
	if r := g.reason(ap.Addr()); r != "" && !g.allowsAddr(ap.Addr(), ap.Port()) {
		return g.blocked("", ap.Addr(), ap.Port(), r)
	}
	return nil
}

func (g *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.ParseUint(portText, 10, 16)
	port := uint16(p)
	lower := strings.TrimSuffix(strings.ToLower(host), ".")
	byName := g.allowsHost(lower, port)
	if metadataHosts[lower] && !byName {
		return nil, g.blocked(host, netip.Addr{}, port, "cloud metadata host name")
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
		if r := g.reason(ip); r != "" && !byName && !g.allowsAddr(ip, port) {
			if firstBlock == nil {
				firstBlock = g.blocked(host, ip, port, r)
			}
			continue
		}
		d := g.dialer
		if byName {
			// Allowed by name: the per-socket re-check would refuse the private
			// address the name legitimately points to.
			d.Control = nil
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), portText))
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

// chainTransport applies the redirect rule: a redirect reaches an allowed private
// host only when the request started at a private host. Otherwise a public page the
// model was told to read could point the fetch, by one 302, at the router or the
// intranet the person allowed for their own use. The first request of a chain goes
// through open (the allow list applies) and notes which address it connected to;
// each redirect goes through open again only when that address was private, and
// else through strict (the allow list ignored). The two never share connections.
type chainTransport struct {
	open, strict http.RoundTripper
	reason       func(netip.Addr) string
}

type chainKey struct{}

// chainStart records where the first request of a chain connected.
type chainStart struct {
	mu      sync.Mutex
	private bool
	known   bool
}

func (c *chainStart) connected(addr net.Addr, reason func(netip.Addr) string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known {
		return
	}
	if ta, ok := addr.(*net.TCPAddr); ok {
		c.private, c.known = reason(ta.AddrPort().Addr().Unmap()) != "", true
	}
}

func (c *chainStart) startedPrivate() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known && c.private
}

func (t *chainTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Response == nil {
		st := &chainStart{}
		ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { st.connected(info.Conn.RemoteAddr(), t.reason) },
		})
		return t.open.RoundTrip(req.WithContext(context.WithValue(ctx, chainKey{}, st)))
	}
	// A redirect: the client made req from the response to the previous request,
	// which is the one this transport passed on, carrying the chain's start.
	var st *chainStart
	if prev := req.Response.Request; prev != nil {
		st, _ = prev.Context().Value(chainKey{}).(*chainStart)
	}
	if st == nil {
		st = &chainStart{} // unknown: treated as public
	}
	req = req.WithContext(context.WithValue(req.Context(), chainKey{}, st))
	if st.startedPrivate() {
		return t.open.RoundTrip(req)
	}
	return t.strict.RoundTrip(req)
}
