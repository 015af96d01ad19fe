package browsertest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// proxyRecorder listens on a loopback port where the browser's proxy would be and
// records the first line of every request that reaches it (GET http://… or
// CONNECT host:443), answering none: what it sees is what the browser tried to send
// off the machine, and sent here instead.
type proxyRecorder struct {
	ln   net.Listener
	mu   sync.Mutex
	seen []string
}

func newProxyRecorder(t *testing.T) *proxyRecorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &proxyRecorder{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				r.mu.Lock()
				r.seen = append(r.seen, strings.TrimSpace(line))
				r.mu.Unlock()
				fmt.Fprint(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return r
}

func (r *proxyRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// servedOn is a page server on one loopback address that records the paths asked of it.
type servedOn struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func serve(t *testing.T, ip string, h http.HandlerFunc) *servedOn {
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	s := &servedOn{}
	s.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, req.URL.Path)
		s.mu.Unlock()
		h(w, req)
	})}}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *servedOn) got(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.paths, path)
}

// pixel is a 1×1 GIF.
var pixel = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// offMachine are addresses a page names outright, which no resolver rule sees: two
// public addresses (one over TLS), the link-local metadata service, and a public
// name.
var offMachine = []struct{ url, proxied string }{
	{"http://93.184.216.34/img.png", "GET http://93.184.216.34/img.png"},
	{"https://203.0.113.9/tls.png", "CONNECT 203.0.113.9:443"},
	{"http://169.254.169.254/latest/meta-data/", "GET http://169.254.169.254/latest/meta-data/"},
	{"http://www.example.com/name.png", "GET http://www.example.com/name.png"},
}

// networkPage names every off-machine address (as images and as a CSS background)
// and two loopback ones (127.0.0.2 and localhost), and reports which images loaded.
func networkPage(other, localhost string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			w.Header().Set("Content-Type", "image/gif")
			w.Write(pixel)
			return
		}
		var b strings.Builder
		b.WriteString(`<!doctype html><meta charset=utf-8><title>net</title><script>window.loaded={};window.failed={}</script>`)
		imgs := []string{other + "/direct.gif", localhost + "/localhost.gif"}
		for _, o := range offMachine {
			imgs = append(imgs, o.url)
		}
		for _, u := range imgs {
			fmt.Fprintf(&b, `<img src=%q onload="loaded[this.src]=1" onerror="failed[this.src]=1">`, u)
		}
		b.WriteString(`<div style="width:50px;height:50px;background:url(http://198.51.100.7/bg.png)"></div>`)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(b.String()))
	}
}

func launchBare(t *testing.T, proxy string) *Browser {
	RequireChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	b, err := Launch(ctx, Options{UserDataDir: TempDir(t, "ferry-net-"), NoExtension: true, Proxy: proxy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

type pageState struct {
	Loaded map[string]int `json:"loaded"`
	Failed map[string]int `json:"failed"`
}

func openNetworkPage(t *testing.T, b *Browser) (*servedOn, *servedOn, pageState) {
	t.Helper()
	other := serve(t, "127.0.0.2", networkPage("", ""))
	local := serve(t, "127.0.0.1", networkPage("", ""))
	main := serve(t, "127.0.0.1", nil)
	main.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		main.mu.Lock()
		main.paths = append(main.paths, r.URL.Path)
		main.mu.Unlock()
		networkPage(other.URL, strings.Replace(local.URL, "127.0.0.1", "localhost", 1))(w, r)
	})
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(main.URL+"/")); err != nil {
		t.Fatalf("navigate to the loopback page: %v", err)
	}
	want := 2 + len(offMachine)
	if err := WaitFor(ctx, b.Ctx, fmt.Sprintf(`Object.keys(loaded).length + Object.keys(failed).length >= %d`, want)); err != nil {
		t.Fatal(err)
	}
	st, err := Eval[pageState](b.Ctx, `({loaded, failed})`)
	if err != nil {
		t.Fatal(err)
	}
	if !main.got("/") {
		t.Errorf("the page itself did not come from its loopback server")
	}
	return other, local, st
}

// TestNoPacketLeaves: with a recorder where the browser's proxy is, every address off
// the machine that a page names outright arrives at the recorder (so it was not sent
// to its address), while loopback (127.0.0.1, 127.0.0.2, localhost) is reached
// directly and never through the proxy.
func TestNoPacketLeaves(t *testing.T) {
	rec := newProxyRecorder(t)
	b := launchBare(t, "http://"+rec.ln.Addr().String())
	other, local, st := openNetworkPage(t, b)

	wants := []string{"GET http://198.51.100.7/bg.png"}
	for _, o := range offMachine {
		wants = append(wants, o.proxied)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		seen := rec.lines()
		missing := slices.DeleteFunc(slices.Clone(wants), func(w string) bool {
			return slices.ContainsFunc(seen, func(s string) bool { return strings.HasPrefix(s, w) })
		})
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy recorder never saw %q (it saw %q): those requests went somewhere other than the loopback proxy", missing, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range rec.lines() {
		if strings.Contains(s, "127.0.0.") || strings.Contains(s, "localhost") {
			t.Errorf("a loopback request went through the proxy: %q", s)
		}
	}
	if !other.got("/direct.gif") || !local.got("/localhost.gif") {
		t.Errorf("the loopback images were not fetched directly (127.0.0.2: %v, localhost: %v)", other.paths, local.paths)
	}
	if len(st.Loaded) != 2 {
		t.Errorf("loaded %v, want only the two loopback images", st.Loaded)
	}
}

// TestOffMachineGoesNowhere: with the default proxy (the closed loopback port) every
// off-machine image fails and the loopback ones load.
func TestOffMachineGoesNowhere(t *testing.T) {
	b := launchBare(t, "")
	_, _, st := openNetworkPage(t, b)
	for _, o := range offMachine {
		if st.Loaded[o.url] != 0 || st.Failed[o.url] != 1 {
			t.Errorf("%s: loaded %v failed %v, want it failed", o.url, st.Loaded, st.Failed)
		}
	}
	if len(st.Loaded) != 2 {
		t.Errorf("loaded %v, want the two loopback images", st.Loaded)
	}
}

func TestLaunchRefusesProxyOffTheMachine(t *testing.T) {
	for _, p := range []string{"http://93.184.216.34:3128", "http://proxy.example:8080", "socks5://10.0.0.1:1080", "::"} {
		_, err := Launch(context.Background(), Options{UserDataDir: t.TempDir(), NoExtension: true, Proxy: p})
		if err == nil || !strings.Contains(err.Error(), "proxy") {
			t.Errorf("Launch with proxy %s: %v, want a refusal", p, err)
		}
	}
}

func TestPinnedChromiumCarriesTheFlags(t *testing.T) {
	RequireChromium(t)
	p := PinnedChromium(t)
	out, err := exec.Command("sh", "-n", p).CombinedOutput()
	if err != nil {
		t.Fatalf("the launcher is not a valid script: %v %s", err, out)
	}
	b, _ := os.ReadFile(p)
	for _, f := range NetworkFlags(ClosedProxy) {
		if !strings.Contains(string(b), shellQuote(f)) {
			t.Errorf("the launcher lacks %s:\n%s", f, b)
		}
	}
}
