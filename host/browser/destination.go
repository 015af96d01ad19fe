package browser

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/host/web"
)

// Navigation is a write, and the person's own machine and network are not the web.
// open_tab with a tab_id navigates a tab the person has open, so it is governed like
// browser_navigate (browser.allow_navigate, and tools.confirm_writes). A destination
// on this computer or its network (file://, loopback, private, link-local, metadata
// addresses: what web_fetch's guard refuses) is opened only where
// browser.allow_private_hosts names it, or after a person approved that call.

// SettingAllowPrivateHosts lists the private destinations browser tools may open
// without asking.
const SettingAllowPrivateHosts = "browser.allow_private_hosts"

// resolveWait bounds the look-up of a destination's addresses.
const resolveWait = 3 * time.Second

func init() {
	config.Register(config.Setting{
		Key: SettingAllowPrivateHosts,
		Description: "comma-separated destinations on this computer or its network that open_tab and browser_navigate open without asking: " +
			"the syntax of " + web.SettingAllowPrivateHosts + " (host names, *.suffixes, IP addresses, CIDRs, each with an optional :port), plus file:// (every local file) " +
			"or file:///a/folder/ (the files under it); elsewhere a person confirms each such navigation",
		Validate: func(v string) error {
			_, err := parsePrivateAllow(v)
			return err
		},
	})
}

// privateAllow is the parsed browser.allow_private_hosts.
type privateAllow struct {
	hosts *web.AllowList
	files []string // path prefixes of file URLs; "/" for every file
}

func parsePrivateAllow(v string) (*privateAllow, error) {
	p := &privateAllow{}
	var rest []string
	for _, raw := range strings.Split(v, ",") {
		e := strings.TrimSpace(raw)
		if len(e) < 5 || !strings.EqualFold(e[:5], "file:") {
			rest = append(rest, e)
			continue
		}
		u, err := url.Parse(e)
		if err != nil || !strings.EqualFold(u.Scheme, "file") || (u.Host != "" && u.Host != "localhost") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not a file URL like file:// or file:///home/me/docs/", e)
		}
		path := u.Path
		if path == "" {
			path = "/"
		}
		p.files = append(p.files, path)
	}
	hosts, err := web.ParseAllowList(strings.Join(rest, ","))
	if err != nil {
		return nil, err
	}
	p.hosts = hosts
	return p, nil
}

func (p *privateAllow) allowsFile(path string) bool {
	for _, prefix := range p.files {
		if prefix == "/" || path == prefix || strings.HasPrefix(path, strings.TrimSuffix(prefix, "/")+"/") {
			return true
		}
	}
	return false
}

// lookup resolves a host name; tests replace it.
var lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// privateDestination says what raw is when it is on this computer or its network
// ("a loopback address (127.0.0.1)", "a file on this computer"), with the entry of
// browser.allow_private_hosts that would allow it, and whether the setting allows
// it already. A public destination, or one whose name does not resolve here (the
// browser decides), is "".
func (d Deps) privateDestination(ctx context.Context, raw string) (what, entry string, allowed bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", "", false
	}
	allow, err := parsePrivateAllow(d.settings(ctx).String(SettingAllowPrivateHosts))
	if err != nil {
		allow = &privateAllow{}
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if h := strings.ToLower(u.Hostname()); h != "" && h != "localhost" {
			// file://server/share is a network share (SMB on Windows): no allowance for
			// local files reaches it.
			return "a file share on " + h, "", false
		}
		path := u.Path
		if path == "" {
			path = "/"
		}
		return "a file on this computer", "file://", allow.allowsFile(path)
	case "http", "https":
	default:
		return "", "", false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", "", false
	}
	port := uint16(80)
	if strings.EqualFold(u.Scheme, "https") {
		port = 443
	}
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		port = uint16(p)
	}
	if allow.hosts.AllowsHost(host, port) {
		return "", "", true
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		if allow.hosts.AllowsAddr(ip, port) {
			return "", "", true
		}
		addrs = []netip.Addr{ip}
	} else if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		// The browser answers these itself, always with loopback.
		addrs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	} else {
		lctx, cancel := context.WithTimeout(ctx, resolveWait)
		addrs, _ = lookup(lctx, host)
		cancel()
	}
	for _, ip := range addrs {
		ip = ip.Unmap().WithZone("")
		reason := web.BlockedReason(ip)
		if reason == "" || allow.hosts.AllowsAddr(ip, port) {
			continue
		}
		article := "a"
		if strings.ContainsRune("aeiou", rune(reason[0])) {
			article = "an"
		}
		if ip.String() == host {
			return fmt.Sprintf("%s %s (%s)", article, reason, host), host, false
		}
		return fmt.Sprintf("%s %s (%s is %s)", article, reason, host, ip), host, false
	}
	return "", "", false
}

// assessNavigation is open_tab's and browser_navigate's assessment: navigating a
// tab that is open already needs browser.allow_navigate, unless the one the call
// acts for opened that tab itself (an outside agent reading page after page in its
// own tab); a private destination needs a person's approval unless
// browser.allow_private_hosts names it.
func (d Deps) assessNavigation(own *ownTabs) func(context.Context, *tools.Call) (tools.Assessment, error) {
	return func(ctx context.Context, call *tools.Call) (tools.Assessment, error) {
		var a struct {
			URL    string `json:"url"`
			TabID  *int   `json:"tab_id"`
			Action string `json:"action"`
		}
		if err := call.Decode(&a); err != nil {
			return tools.Assessment{}, err
		}
		var out tools.Assessment
		if call.Tool == "browser_navigate" || a.TabID != nil {
			tab := call.TabID
			if a.TabID != nil {
				tab = *a.TabID
			}
			switch {
			case tab > 0 && own.has(tools.Owner(ctx, call), tab):
				// Its own tab: nothing of the person's changes.
			case !d.settings(ctx).Bool(SettingAllowNavigate):
				if call.Tool == "open_tab" {
					return out, tools.Failf(tools.CodePermissionDenied, "open_tab with a tab_id navigates a tab that is open already, which is off: the setting %s is false; a person can allow it with `ferry config set %s true` (without tab_id, open_tab opens the URL in a new tab, which may then be navigated)", SettingAllowNavigate, SettingAllowNavigate)
				}
				return out, tools.Failf(tools.CodePermissionDenied, "browser_navigate is off for tabs this caller did not open: the setting %s is false; a person can allow it with `ferry config set %s true` (open_tab opens a URL in a new tab, which may then be navigated)", SettingAllowNavigate, SettingAllowNavigate)
			default:
				out.Write = true
			}
		}
		return d.assessDestination(ctx, a.URL, out)
	}
}

// assessDestination adds to out what a navigation to raw needs: a checked URL, and
// a person's approval for a private destination that no setting names.
func (d Deps) assessDestination(ctx context.Context, raw string, out tools.Assessment) (tools.Assessment, error) {
	if raw == "" {
		return out, nil
	}
	if err := checkURL(raw); err != nil {
		return out, err
	}
	what, entry, allowed := d.privateDestination(ctx, raw)
	if what == "" || allowed {
		return out, nil
	}
	out.Confirm = true
	if entry == "" {
		// Nothing in the setting allows it: every such call asks.
		out.Message = fmt.Sprintf("Open %s? It is %s, not a page of the public web: opening it reaches another machine of your network.", raw, what)
		return out, nil
	}
	out.Message = fmt.Sprintf("Open %s? It is %s, not a page of the public web: what runs there can reach your own machine and network. "+
		"To open such addresses without being asked, add %s to the setting %s.", raw, what, entry, SettingAllowPrivateHosts)
	return out, nil
}

// ownTabs is the tabs each owner (tools.Owner) opened with open_tab, bounded: past
// maxOwners owners an arbitrary one is forgotten, past maxOwnTabs tabs an owner's
// set starts again; forgetting only means a person's setting decides again.
type ownTabs struct {
	mu sync.Mutex
	by map[string]map[int]bool
}

const (
	maxOwners  = 1024
	maxOwnTabs = 1024
)

func (o *ownTabs) add(owner string, tab int) {
	if tab <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	set := o.by[owner]
	if set == nil || len(set) >= maxOwnTabs {
		if len(o.by) >= maxOwners {
			for k := range o.by {
				delete(o.by, k)
				break
			}
		}
		set = map[int]bool{}
		o.by[owner] = set
	}
	set[tab] = true
}

func (o *ownTabs) has(owner string, tab int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.by[owner][tab]
}
