// Package loopback gives tests HTTP clients that reach this machine only: their
// dialer refuses any address that is not loopback, whatever a URL, a redirect or a
// page under test names, so no test's request leaves the machine.
package loopback

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Dial connects like net.Dialer.DialContext, but only to loopback addresses (and the
// unspecified address, which stands for this machine when dialed). No
// name is resolved (a DNS query would itself leave the machine): localhost and
// names under it stand for 127.0.0.1 and ::1, an IP literal for itself, and any
// other name is refused.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if ip, perr := netip.ParseAddr(host); perr == nil {
		ips = []netip.Addr{ip}
	} else if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		ips = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	} else {
		return nil, fmt.Errorf("loopback: %s is a name other than localhost: tests dial loopback only, and resolve no name", addr)
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	var last error
	for _, ip := range ips {
		// Dialing the unspecified address (0.0.0.0, ::) reaches this machine's own
		// listeners: a server bound to every interface prints it as its address.
		if u := ip.Unmap(); !u.IsLoopback() && !u.IsUnspecified() {
			last = fmt.Errorf("loopback: %s (%s) is not on this machine: tests dial loopback only", addr, ip)
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("loopback: %s has no address", addr)
	}
	return nil, last
}

// Transport is an http.Transport that dials loopback only and uses no proxy from
// the environment (which could itself be off the machine).
func Transport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         Dial,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
}

// Client is an http.Client over Transport.
func Client() *http.Client { return &http.Client{Transport: Transport()} }

// PinDefault makes http.DefaultTransport (and so http.Get and http.DefaultClient) dial
// loopback only, for a test binary's TestMain: every client a test builds without a
// transport of its own is covered too.
func PinDefault() {
	http.DefaultTransport = Transport()
}
