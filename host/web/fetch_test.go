package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/markdown"
	"github.com/ferryhq/ferry/host/tools"
)

type fakeSettings = config.Values

// fakeResolver answers from a table, so tests can give public-looking names loopback
// addresses; any other name is "not found".
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

type panicResolver struct{ t *testing.T }

func (p panicResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	p.t.Errorf("resolver asked for %q, which should have been refused before any lookup", host)
	return nil, errors.New("unexpected lookup")
}

func allowLoopback() Deps {
	return Deps{Settings: fakeSettings{SettingAllowPrivateHosts: "127.0.0.1"}}
}

// run calls web_fetch the way the pipeline does.
func run(t *testing.T, d Deps, args any) (*Result, *tools.Failure) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	tl := Tools(d)[0]
	out, err := tl.Run(context.Background(), &tools.Call{Tool: tl.Name, Arguments: raw})
	if err != nil {
		var f *tools.Failure
		if !errors.As(err, &f) {
			t.Fatalf("web_fetch returned a bare error (HANDLER_ERROR without a chosen code): %v", err)
		}
		return nil, f
	}
	return out.(*Result), nil
}

func mustOK(t *testing.T, d Deps, args any) *Result {
	t.Helper()
	res, f := run(t, d, args)
	if f != nil {
		t.Fatalf("web_fetch failed: %v", f)
	}
	return res
}

func mustFail(t *testing.T, d Deps, args any, code tools.Code, reasonParts ...string) *tools.Failure {
	t.Helper()
	res, f := run(t, d, args)
	if f == nil {
		t.Fatalf("web_fetch succeeded, want %s: %+v", code, res)
	}
	if f.Code != code {
		t.Fatalf("code %s, want %s (reason: %s)", f.Code, code, f.Reason)
	}
	for _, p := range reasonParts {
		if !strings.Contains(f.Reason, p) {
			t.Errorf("reason %q does not mention %q", f.Reason, p)
		}
	}
	return f
}

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func TestToolDefinition(t *testing.T) {
	ts := Tools(Deps{})
	if len(ts) != 1 || ts[0].Name != "web_fetch" || ts[0].Kind != tools.KindRead || ts[0].Source != tools.SourceBuiltin {
		t.Fatalf("unexpected tools: %+v", ts)
	}
	var schema struct {
		Type       string                    `json:"type"`
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(ts[0].Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || len(schema.Required) != 1 || schema.Required[0] != "url" {
		t.Errorf("schema: %+v", schema)
	}
	if schema.Properties["url"]["format"] != "uri" || schema.Properties["max_length"]["type"] != "integer" || schema.Properties["max_length"]["minimum"] != 1.0 {
		t.Errorf("properties: %+v", schema.Properties)
	}
	if _, ok := schema.Properties["prompt"]; !ok {
		t.Error("no prompt property")
	}
}

func TestSettingsRegistered(t *testing.T) {
	for key, good := range map[string][]string{
		SettingAllowPrivateHosts: {"", "127.0.0.1", "localhost, 10.0.0.0/8,::1,[fe80::1], *.corp.example, .lan",
			"localhost:8080, 127.0.0.1:3000, [::1]:3000, 10.0.0.0/8:22, [fd00::/8]:443, *.corp.example:8443, intranet."},
		SettingMaxBodyBytes: {"1024", "10485760"},
		SettingMaxLength:    {"0", "5000"},
	} {
		s, err := config.Lookup(key)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range good {
			if err := s.Check(v); err != nil {
				t.Errorf("%s=%q refused: %v", key, v, err)
			}
		}
	}
	s, _ := config.Lookup(SettingAllowPrivateHosts)
	for _, bad := range []string{"http://localhost", "localhost:0", "localhost:65536", "localhost:http", "10.0.0.0/33", "a..b", "*.",
		"::1:8080:x", "[::1", "fe80::1:80]", "user@host", "host/path", "[intranet]:80"} {
		if err := s.Check(bad); err == nil {
			t.Errorf("%s=%q accepted", SettingAllowPrivateHosts, bad)
		}
	}
}

func TestLoopbackRefusedByDefault(t *testing.T) {
	hit := false
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { hit = true })
	mustFail(t, Deps{}, map[string]any{"url": s.URL}, tools.CodePermissionDenied,
		"127.0.0.1", "loopback", SettingAllowPrivateHosts)
	if hit {
		t.Error("the refused server was reached")
	}
}

func TestFetchHTMLWhenAllowed(t *testing.T) {
	var ua string
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		ua = r.UserAgent()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Hello page</title></head><body><nav><a href="/">Home</a></nav>
<main><h1>Hello</h1><p>Ferry fetched this paragraph, with its <a href="/x">link text</a>.</p></main><footer>footer text</footer></body></html>`)
	})
	res := mustOK(t, allowLoopback(), map[string]any{"url": s.URL + "/page"})
	if res.URL != s.URL+"/page" || res.FinalURL != s.URL+"/page" || res.ContentType != "text/html" || res.Status != 200 || res.Truncated {
		t.Errorf("result: %+v", res)
	}
	if res.Title != "Hello page" {
		t.Errorf("title %q", res.Title)
	}
	// Readability leaves out the heading that repeats the title (title carries it).
	want := "Ferry fetched this paragraph, with its link text."
	if res.Content != want {
		t.Errorf("content %q, want %q", res.Content, want)
	}
	if !strings.Contains(ua, "Ferry/") {
		t.Errorf("User-Agent %q does not name Ferry", ua)
	}
}

func TestBadURLs(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"ftp://example.com/file", `scheme "ftp"`},
		{"file:///etc/passwd", `scheme "file"`},
		{"javascript:alert(1)", `scheme "javascript"`},
		{"example.com/page", "no scheme"},
		{"http://user:secret@example.com/", "credentials"},
		{"http://user@example.com/", "credentials"},
		{"http://example.com:0/", "out of range"},
		{"http://example.com:70000/", "out of range"},
		{"http:///path", "no host"},
		{"http://exa mple.com/", "url"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			f := mustFail(t, Deps{resolver: panicResolver{t}}, map[string]any{"url": tc.url}, tools.CodeInvalidParams, tc.want)
			if strings.Contains(f.Reason, "user:secret") {
				t.Errorf("reason leaks the password: %s", f.Reason)
			}
		})
	}
	mustFail(t, Deps{}, map[string]any{"url": "http://example.com/", "max_length": 0}, tools.CodeInvalidParams, "max_length")
}

func TestRedirectChain(t *testing.T) {
	var s *httptest.Server
	s = serve(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/r/%d", &n); err == nil && n > 0 {
			http.Redirect(w, r, fmt.Sprintf("%s/r/%d", s.URL, n-1), http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "arrived")
	})
	res := mustOK(t, allowLoopback(), map[string]any{"url": s.URL + "/r/10"})
	if res.Content != "arrived" || res.FinalURL != s.URL+"/r/0" || res.URL != s.URL+"/r/10" {
		t.Errorf("10 redirects: %+v", res)
	}
	mustFail(t, allowLoopback(), map[string]any{"url": s.URL + "/r/11"}, tools.CodeHandlerError, "too many redirects", "10")
}

func TestRedirectToUnsupportedScheme(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://files.example.com/x", http.StatusMovedPermanently)
	})
	mustFail(t, allowLoopback(), map[string]any{"url": s.URL}, tools.CodeHandlerError, "redirected", `scheme "ftp"`)
}

// The re-check on redirect: "localhost" is allowed by name, 127.0.0.0/8 is not. A
// redirect from the allowed name to the same server by IP, or to another loopback
// address, must be refused at connect time.
func TestRedirectFromAllowedNameToRefusedAddress(t *testing.T) {
	var s *httptest.Server
	s = serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
		switch r.URL.Path {
		case "/to-ip":
			http.Redirect(w, r, "http://127.0.0.1:"+port+"/ok", http.StatusFound)
		case "/to-other":
			http.Redirect(w, r, "http://127.0.0.2:"+port+"/ok", http.StatusFound)
		case "/to-name":
			http.Redirect(w, r, "http://localhost:"+port+"/ok", http.StatusFound)
		default:
			fmt.Fprint(w, "ok")
		}
	})
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	d := Deps{
		Settings: fakeSettings{SettingAllowPrivateHosts: "localhost"},
		resolver: fakeResolver{"localhost": {"127.0.0.1"}},
	}
	base := "http://localhost:" + port
	if res := mustOK(t, d, map[string]any{"url": base + "/to-name"}); res.Content != "ok" || res.FinalURL != base+"/ok" {
		t.Errorf("allowed by name: %+v", res)
	}
	mustFail(t, d, map[string]any{"url": base + "/to-ip"}, tools.CodePermissionDenied, "127.0.0.1", "loopback")
	mustFail(t, d, map[string]any{"url": base + "/to-other"}, tools.CodePermissionDenied, "127.0.0.2", SettingAllowPrivateHosts)
}

func TestPublicNameResolvingToLoopback(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal") })
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	r := fakeResolver{"news.example.com": {"127.0.0.1"}, "mixed.example.com": {"10.1.2.3", "::1"}}
	u := "http://news.example.com:" + port + "/"
	mustFail(t, Deps{resolver: r}, map[string]any{"url": u}, tools.CodePermissionDenied,
		"127.0.0.1", `"news.example.com"`, SettingAllowPrivateHosts)
	mustFail(t, Deps{resolver: r}, map[string]any{"url": "http://mixed.example.com/"}, tools.CodePermissionDenied, "10.1.2.3", "private")
	// Allowing the address (not the name) lets the same URL through.
	d := Deps{resolver: r, Settings: fakeSettings{SettingAllowPrivateHosts: "127.0.0.0/8"}}
	if res := mustOK(t, d, map[string]any{"url": u}); res.Content != "internal" {
		t.Errorf("allowed by CIDR: %+v", res)
	}
}

func TestRefusedAddresses(t *testing.T) {
	d := Deps{resolver: panicResolver{t}}
	for _, tc := range []struct{ url, want string }{
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "cloud metadata"},
		{"http://metadata.google.internal/computeMetadata/v1/", "metadata host name"},
		{"http://METADATA.GOOGLE.INTERNAL./computeMetadata/v1/", "metadata host name"},
		{"http://[::ffff:127.0.0.1]:1/", "loopback"},
		{"http://[::ffff:169.254.169.254]/", "cloud metadata"},
		{"http://[::1]:1/", "loopback"},
		{"http://0.0.0.0:1/", "unspecified"},
		{"http://10.0.0.1/", "private"},
		{"http://192.168.1.1/", "private"},
		{"http://172.16.0.1/", "private"},
		{"http://100.64.0.1/", "carrier-grade NAT"},
		{"http://224.0.0.1/", "multicast"},
		{"http://255.255.255.255/", "broadcast"},
		{"http://[fe80::1]/", "link-local"},
		{"http://[fc00::1]/", "private"},
		{"http://[64:ff9b::7f00:1]/", "loopback"},
		{"http://[2002:a00:1::]/", "private"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			mustFail(t, d, map[string]any{"url": tc.url}, tools.CodePermissionDenied, tc.want, SettingAllowPrivateHosts)
		})
	}
}

func TestBlockedReason(t *testing.T) {
	for addr, blocked := range map[string]bool{
		"127.0.0.1": true, "127.255.255.254": true, "10.0.0.0": true, "172.31.255.255": true,
		"172.32.0.1": false, "192.168.0.1": true, "169.254.1.1": true, "100.64.0.0": true,
		"100.127.255.255": true, "100.128.0.0": false, "0.0.0.0": true, "0.1.2.3": true,
		"255.255.255.255": true, "240.0.0.1": true, "224.0.0.251": true, "198.18.0.1": true,
		"8.8.8.8": false, "1.1.1.1": false, "93.184.216.34": false,
		"::1": true, "::": true, "fe80::1": true, "fc00::1": true, "fd12:3456::1": true,
		"ff02::1": true, "fec0::1": true, "::ffff:10.0.0.1": true, "::ffff:8.8.8.8": false,
		"64:ff9b::a00:1": true, "64:ff9b::808:808": false, "2002:7f00:1::": true,
		"2002:808:808::": false, "2001:4860:4860::8888": false, "2606:4700::1111": false,
		"fe80::1%eth0": true,
	} {
		got := BlockedReason(netip.MustParseAddr(addr)) != ""
		if got != blocked {
			t.Errorf("%s: blocked=%v, want %v (%q)", addr, got, blocked, BlockedReason(netip.MustParseAddr(addr)))
		}
	}
}

func TestAllowList(t *testing.T) {
	al, err := ParseAllowList(" Intranet.Example , 10.0.0.0/8, ::1, *.corp.example, .lan, 192.168.1.5, wiki.example:8080, 127.0.0.1:3000, [fe80::1]:22, 172.16.0.0/12:443, [fd00::/8]:8443 ")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port uint16
		want bool
	}{
		{"intranet.example", 80, true}, {"INTRANET.example.", 9999, true}, {"x.intranet.example", 80, false},
		{"a.corp.example", 443, true}, {"corp.example", 443, false}, {"printer.lan", 631, true}, {"lan", 80, false},
		{"wiki.example", 8080, true}, {"wiki.example", 80, false},
	} {
		if al.AllowsHost(c.host, c.port) != c.want {
			t.Errorf("host %s:%d: %v", c.host, c.port, !c.want)
		}
	}
	for _, c := range []struct {
		addr string
		port uint16
		want bool
	}{
		{"10.9.8.7", 1, true}, {"::ffff:10.9.8.7", 1, true}, {"11.0.0.1", 1, false}, {"::1", 5, true},
		{"192.168.1.5", 80, true}, {"192.168.1.6", 80, false},
		{"127.0.0.1", 3000, true}, {"127.0.0.1", 3001, false}, {"fe80::1", 22, true}, {"fe80::1", 23, false},
		{"172.20.1.1", 443, true}, {"172.20.1.1", 80, false}, {"fd12::1", 8443, true}, {"fd12::1", 443, false},
	} {
		if al.AllowsAddr(netip.MustParseAddr(c.addr), c.port) != c.want {
			t.Errorf("address %s port %d: %v", c.addr, c.port, !c.want)
		}
	}
	var none *AllowList
	if none.AllowsHost("localhost", 80) || none.AllowsAddr(netip.MustParseAddr("127.0.0.1"), 80) {
		t.Error("a nil list allows")
	}
}

// The finding: fetch.allow_private_hosts could not name a port. Allowing one port of
// a loopback address lets that port through and no other.
func TestAllowedPortOnly(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "dev server") })
	other := serve(t, func(w http.ResponseWriter, r *http.Request) { t.Error("the other port was reached") })
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	d := Deps{Settings: fakeSettings{SettingAllowPrivateHosts: "127.0.0.1:" + port}}
	if res := mustOK(t, d, map[string]any{"url": s.URL}); res.Content != "dev server" {
		t.Errorf("the allowed port: %+v", res)
	}
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	mustFail(t, d, map[string]any{"url": other.URL}, tools.CodePermissionDenied, "loopback", "127.0.0.1:"+otherPort+" for that port only")
	// By name, with a port.
	d = Deps{Settings: fakeSettings{SettingAllowPrivateHosts: "dev.local:" + port}, resolver: fakeResolver{"dev.local": {"127.0.0.1"}}}
	if res := mustOK(t, d, map[string]any{"url": "http://dev.local:" + port + "/"}); res.Content != "dev server" {
		t.Errorf("the allowed name and port: %+v", res)
	}
	mustFail(t, d, map[string]any{"url": "http://dev.local:" + otherPort + "/"}, tools.CodePermissionDenied, "loopback")
}

// publicLoopback is BlockedReason with 127.0.0.2 playing a public host: the only way
// to serve a "public" page from loopback.
func publicLoopback(a netip.Addr) string {
	if a == netip.MustParseAddr("127.0.0.2") {
		return ""
	}
	return BlockedReason(a)
}

// The finding: an allowed private host was reachable by a redirect from any public
// page. A redirect now reaches it only when the fetch started at a private host.
func TestRedirectToAllowedPrivateOnlyFromPrivate(t *testing.T) {
	reached := 0
	private := serve(t, func(w http.ResponseWriter, r *http.Request) { reached++; fmt.Fprint(w, "router admin page") })
	_, privPort, _ := net.SplitHostPort(private.Listener.Addr().String())
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skip("no 127.0.0.2 to play the public page:", err)
	}
	public := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hop":
			http.Redirect(w, r, "/evil", http.StatusFound) // public to public first
		case "/evil":
			http.Redirect(w, r, "http://127.0.0.1:"+privPort+"/admin", http.StatusFound)
		default:
			fmt.Fprint(w, "public page")
		}
	})}}
	public.Start()
	defer public.Close()
	_, pubPort, _ := net.SplitHostPort(l.Addr().String())
	d := Deps{reason: publicLoopback, Settings: fakeSettings{SettingAllowPrivateHosts: "127.0.0.1:" + privPort}}

	for _, path := range []string{"/evil", "/hop"} {
		mustFail(t, d, map[string]any{"url": "http://127.0.0.2:" + pubPort + path}, tools.CodePermissionDenied,
			"refused to follow a redirect to 127.0.0.1", "started at a public host")
	}
	if reached != 0 {
		t.Fatalf("the allowed private host was reached %d times through a public page's redirect", reached)
	}
	// Directly, it is allowed; and a private start may redirect to it.
	if res := mustOK(t, d, map[string]any{"url": private.URL + "/admin"}); res.Content != "router admin page" {
		t.Errorf("direct fetch: %+v", res)
	}
	hopper := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+privPort+"/admin", http.StatusFound)
	})
	_, hopPort, _ := net.SplitHostPort(hopper.Listener.Addr().String())
	d.Settings = fakeSettings{SettingAllowPrivateHosts: "127.0.0.1"}
	if res := mustOK(t, d, map[string]any{"url": "http://127.0.0.1:" + hopPort + "/"}); res.Content != "router admin page" {
		t.Errorf("private to private redirect: %+v", res)
	}
	// A public page redirecting to another public page is unaffected.
	if res := mustOK(t, d, map[string]any{"url": "http://127.0.0.2:" + pubPort + "/"}); res.Content != "public page" {
		t.Errorf("public page: %+v", res)
	}
}

// The dialer's Control hook sees the address the socket connects to, whatever path
// led there; it refuses loopback by itself.
func TestControlRefusesLoopback(t *testing.T) {
	g := newGuardedDialer(panicResolver{t}, nil, &AllowList{}, false)
	err := g.control("tcp4", "127.0.0.1:80", nil)
	var be *BlockedError
	if !errors.As(err, &be) || be.Addr != "127.0.0.1" {
		t.Fatalf("control: %v", err)
	}
	if err := g.control("tcp4", "8.8.8.8:443", nil); err != nil {
		t.Errorf("public address refused: %v", err)
	}
}

// An environment proxy would make the connection on our behalf, out of reach of the
// address check; web_fetch must ignore it. The proxy here is reachable (loopback is
// allowed) and would answer for a name that does not resolve, so only a fetch that
// bypasses the proxy fails.
func TestNoEnvironmentProxy(t *testing.T) {
	proxied := false
	proxy := serve(t, func(w http.ResponseWriter, r *http.Request) { proxied = true; fmt.Fprint(w, "from proxy") })
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	d := allowLoopback()
	d.resolver = fakeResolver{}
	mustFail(t, d, map[string]any{"url": "http://unresolvable.example/"}, tools.CodeHandlerError, "could not resolve", "unresolvable.example")
	if proxied {
		t.Error("the request went through the environment proxy")
	}
}

func TestSlowServer(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "start…")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	d := allowLoopback()
	d.timeout = 200 * time.Millisecond
	for _, path := range []string{"/slow-headers", "/slow-body"} {
		start := time.Now()
		mustFail(t, d, map[string]any{"url": s.URL + path}, tools.CodeTimeout, "within 200ms")
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: took %s", path, el)
		}
	}
}

func TestHugeBody(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/html" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<html><body><article><h1>Endless</h1>")
			for i := 0; i < 20000; i++ {
				fmt.Fprintf(w, "<p>Paragraph %d of an endless article, with some words in it.</p>", i)
			}
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		chunk := strings.Repeat("渡船", 1000) // 3-byte runes, so the cap falls inside one
		for i := 0; i < 400; i++ {
			fmt.Fprint(w, chunk)
		}
	})
	d := allowLoopback()
	d.Settings.(fakeSettings)[SettingMaxBodyBytes] = "10000"
	d.Settings.(fakeSettings)[SettingMaxLength] = "0"
	res := mustOK(t, d, map[string]any{"url": s.URL + "/text"})
	if !res.Truncated || len(res.Content) > 10000 || len(res.Content) < 9990 || !utf8.ValidString(res.Content) || strings.ContainsRune(res.Content, utf8.RuneError) {
		t.Errorf("text over the cap: truncated=%v, %d bytes, valid=%v", res.Truncated, len(res.Content), utf8.ValidString(res.Content))
	}
	res = mustOK(t, d, map[string]any{"url": s.URL + "/html"})
	if !res.Truncated || !strings.HasPrefix(res.Content, "## Endless\n\nParagraph 0 of") || len(res.Content) > 10000 {
		t.Errorf("html over the cap: truncated=%v, %q…", res.Truncated, res.Content[:min(80, len(res.Content))])
	}
}

func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encoding fixture: %v", err)
	}
	return b
}

func TestCharsets(t *testing.T) {
	zhHans := "渡船清晨六点离开港口，载着乘客和苹果。"
	zhHant := "渡輪清晨六點離開港口，載著乘客和蘋果。"
	ja := "フェリーは朝六時に港を出た。"
	ko := "여객선은 아침 여섯 시에 항구를 떠났다."
	longHead := "<script>" + strings.Repeat("var x = 1;\n", 200) + "</script>" // pushes <meta> past 1024 bytes
	bodies := map[string]struct {
		ct   string
		body []byte
		want string
	}{
		"gbk-header": {"text/html; charset=GBK", encode(t, simplifiedchinese.GBK,
			"<html><body><p>"+zhHans+"</p></body></html>"), zhHans},
		"gb18030-meta": {"text/html", encode(t, simplifiedchinese.GB18030,
			`<html><head><meta charset="gb18030"></head><body><p>`+zhHans+`</p></body></html>`), zhHans},
		"big5-meta": {"text/html", encode(t, traditionalchinese.Big5,
			`<html><head><meta charset="big5"><title>t</title></head><body><p>`+zhHant+`</p></body></html>`), zhHant},
		"shift_jis-late-meta": {"text/html", encode(t, japanese.ShiftJIS,
			`<html><head>`+longHead+`<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"></head><body><p>`+ja+`</p></body></html>`), ja},
		"euc-kr-text":   {"text/plain; charset=euc-kr", encode(t, korean.EUCKR, ko), ko},
		"euc-jp-header": {"text/plain; charset=EUC-JP", encode(t, japanese.EUCJP, ja), ja},
		// Undeclared and not UTF-8: windows-1252, as browsers decode it.
		"undeclared-1252": {"text/html", []byte("<p>Caf\xe9 cr\xe8me \x93quoted\x94</p>"), "Café crème “quoted”"},
		// A server default of ISO-8859-1 over bytes that are UTF-8.
		"latin1-header-utf8-body": {"text/html; charset=ISO-8859-1", []byte("<p>" + zhHans + " café</p>"), zhHans + " café"},
		// A byte order mark outranks a wrong header.
		"bom-over-header": {"text/plain; charset=gbk", append([]byte("\xef\xbb\xbf"), ja...), ja},
		// An unknown label is ignored rather than failing the fetch.
		"unknown-label": {"text/plain; charset=x-no-such", []byte(ja), ja},
	}
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b := bodies[strings.TrimPrefix(r.URL.Path, "/")]
		w.Header().Set("Content-Type", b.ct)
		w.Write(b.body)
	})
	for name, b := range bodies {
		t.Run(name, func(t *testing.T) {
			res := mustOK(t, allowLoopback(), map[string]any{"url": s.URL + "/" + name})
			if strings.TrimPrefix(res.Content, "\ufeff") != b.want {
				t.Errorf("content %q, want %q", res.Content, b.want)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"zeta":1,"alpha":[true,null,"渡船"],"n":1.50}`)
		case "/problem":
			w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
			fmt.Fprint(w, `{"type":"about:blank","title":"x"}`)
		case "/broken":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"unterminated": `)
		}
	})
	res := mustOK(t, allowLoopback(), map[string]any{"url": s.URL + "/ok"})
	want := "{\n  \"zeta\": 1,\n  \"alpha\": [\n    true,\n    null,\n    \"渡船\"\n  ],\n  \"n\": 1.50\n}"
	if res.Content != want || res.ContentType != "application/json" {
		t.Errorf("content %q (%s), want %q", res.Content, res.ContentType, want)
	}
	if res := mustOK(t, allowLoopback(), map[string]any{"url": s.URL + "/problem"}); !strings.Contains(res.Content, "\n  \"title\": \"x\"") {
		t.Errorf("+json not pretty-printed: %q", res.Content)
	}
	if res := mustOK(t, allowLoopback(), map[string]any{"url": s.URL + "/broken"}); res.Content != `{"unterminated": ` {
		t.Errorf("broken JSON: %q", res.Content)
	}
}

func TestBinaryRefused(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00")
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/png":
			w.Header().Set("Content-Type", "image/png")
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
		case "/octet":
			w.Header().Set("Content-Type", "application/octet-stream")
		case "/sniffed":
			w.Header()["Content-Type"] = nil // no type: Go's server would sniff one
		}
		w.Write(png)
	})
	for path, typ := range map[string]string{"/png": "image/png", "/pdf": "application/pdf", "/octet": "application/octet-stream", "/sniffed": "image/png"} {
		mustFail(t, allowLoopback(), map[string]any{"url": s.URL + path}, tools.CodeHandlerError, typ, "cannot read")
	}
}

func TestHTTPErrorStatus(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><body><nav>menu</nav><h1>Page not found</h1><p>Try the search.</p></body></html>")
	})
	mustFail(t, allowLoopback(), map[string]any{"url": s.URL}, tools.CodeHandlerError, "404", "Page not found")
}

func TestMaxLength(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "渡船🚢 ferry")
	})
	for _, tc := range []struct {
		n         int
		want      string
		truncated bool
	}{
		{1, "渡", true}, {3, "渡船🚢", true}, {5, "渡船🚢 f", true}, {9, "渡船🚢 ferry", false}, {100, "渡船🚢 ferry", false},
	} {
		res := mustOK(t, allowLoopback(), map[string]any{"url": s.URL, "max_length": tc.n})
		if res.Content != tc.want || res.Truncated != tc.truncated {
			t.Errorf("max_length %d: %q truncated=%v, want %q %v", tc.n, res.Content, res.Truncated, tc.want, tc.truncated)
		}
	}
	d := allowLoopback()
	d.Settings.(fakeSettings)[SettingMaxLength] = "2"
	if res := mustOK(t, d, map[string]any{"url": s.URL}); res.Content != "渡船" || !res.Truncated {
		t.Errorf("default from %s: %+v", SettingMaxLength, res)
	}
}

type fakeSummarizer struct {
	prompt, content string
	err             error
}

func (f *fakeSummarizer) Summarize(_ context.Context, prompt, content string) (string, error) {
	f.prompt, f.content = prompt, content
	return "SUMMARY: " + prompt, f.err
}

func TestPrompt(t *testing.T) {
	hits := 0
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<article><h1>News</h1><p>The ferry is late today because of the wind.</p></article>")
	})
	mustFail(t, allowLoopback(), map[string]any{"url": s.URL, "prompt": "why late?"}, tools.CodeActionUnavailable, "ferry provider add")
	if hits != 0 {
		t.Error("fetched although the prompt could not be served")
	}

	sum := &fakeSummarizer{}
	d := allowLoopback()
	d.Summarizer = sum
	res := mustOK(t, d, map[string]any{"url": s.URL, "prompt": "why late?", "max_length": 12})
	if sum.prompt != "why late?" || sum.content != "## News\n\nThe ferry is late today because of the wind." {
		t.Errorf("summarizer got %q / %q", sum.prompt, sum.content)
	}
	if res.Content != "SUMMARY: why" || !res.Truncated || !res.Summarized {
		t.Errorf("result %+v", res)
	}

	d.Summarizer = &fakeSummarizer{err: fmt.Errorf("provider lookup: %w", ErrNoModel)}
	mustFail(t, d, map[string]any{"url": s.URL, "prompt": "x"}, tools.CodeActionUnavailable, "ferry provider add")
	d.Summarizer = &fakeSummarizer{err: errors.New("rate limited by vendor")}
	mustFail(t, d, map[string]any{"url": s.URL, "prompt": "x"}, tools.CodeHandlerError, "rate limited by vendor")
}

func TestNewClientIsGuarded(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	c := NewClient(context.Background(), nil, 5*time.Second)
	_, err := c.Get(s.URL)
	var be *BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("unguarded client: %v", err)
	}
	c = NewClient(context.Background(), fakeSettings{SettingAllowPrivateHosts: "127.0.0.1"}, 5*time.Second)
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if buf.String() != "ok" {
		t.Errorf("body %q", buf.String())
	}
}

// A stored setting that no longer parses reads as its default, as every setting
// does: here no private address is allowed, and the body cap is the default one.
func TestBadStoredSettings(t *testing.T) {
	d := Deps{Settings: fakeSettings{SettingAllowPrivateHosts: "http://intranet"}, resolver: panicResolver{t}}
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("private")) })
	mustFail(t, d, map[string]any{"url": s.URL}, tools.CodePermissionDenied, "127.0.0.1")
	d = Deps{Settings: fakeSettings{SettingAllowPrivateHosts: "127.0.0.1", SettingMaxBodyBytes: "lots"}}
	if res := mustOK(t, d, map[string]any{"url": s.URL}); res.Content != "private" || res.Truncated {
		t.Fatalf("%+v", res)
	}
}

// The Chinese page end to end: served as GB2312/GBK bytes with no charset in the
// header, decoded through its <meta http-equiv>, extracted like the golden file.
func TestFetchGBKPage(t *testing.T) {
	src, err := os.ReadFile("../markdown/testdata/zh.html")
	if err != nil {
		t.Fatal(err)
	}
	gbk := encode(t, simplifiedchinese.GBK, string(src))
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(gbk)
	})
	res := mustOK(t, allowLoopback(), map[string]any{"url": s.URL})
	want := markdown.Extract(string(src), nil)
	if res.Content != want.Markdown || res.Title != want.Title {
		t.Errorf("GBK page: %q / %q", res.Title, res.Content)
	}
}
