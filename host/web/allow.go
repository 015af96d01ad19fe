package web

import "net/netip"

// AllowList is a parsed private-network allow list in fetch.allow_private_hosts's
// syntax (host names, *.suffixes, IP addresses, CIDRs), for the other settings that
// share it (the browser tools' browser.allow_private_hosts): one syntax, one parser.
type AllowList struct{ l *allowList }

// ParseAllowList reads a comma-separated allow list; a bad entry is an error naming it.
func ParseAllowList(v string) (*AllowList, error) {
	l, err := parseAllowList(v)
	if err != nil {
		return nil, err
	}
	return &AllowList{l}, nil
}

// AllowsHost reports whether the list names host (a name or an IP literal).
func (a *AllowList) AllowsHost(host string) bool {
	if a == nil {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return a.l.ipAllowed(ip)
	}
	return a.l.hostAllowed(host)
}

// AllowsAddr reports whether the list names ip, or a CIDR that holds it.
func (a *AllowList) AllowsAddr(ip netip.Addr) bool { return a != nil && a.l.ipAllowed(ip) }

// PrivateReason says why ip is not a public address ("loopback address", "private
// address", …), or "" when it is one: what web_fetch's guard refuses.
func PrivateReason(ip netip.Addr) string { return blockedReason(ip) }
