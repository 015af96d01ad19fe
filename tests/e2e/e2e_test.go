// Package e2e drives the real ferry binary through a real headless Chromium and the
// real extension: the only place where the browser's native messaging, the extension's
// host client and the host meet. Run with `go test ./tests/e2e` (under 10 s); it needs
// /usr/bin/chromium (or FERRY_CHROMIUM), and FERRY_SKIP_BROWSER=1 skips the browser
// tests on machines without one.
package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host"
	"github.com/ferryhq/ferry/tests/browsertest"
	"github.com/ferryhq/ferry/tests/loopback"
)

// ferryBin is built once for the package: building per test would dominate the run.
var ferryBin string

func TestMain(m *testing.M) {
	// Every client the tests build without a transport of their own (http.Get,
	// http.DefaultClient) reaches this machine only.
	loopback.PinDefault()
	dir, err := os.MkdirTemp("", "ferry-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ferryBin, err = browsertest.Build("./cmd/ferry", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ferry runs the built binary with FERRY_HOME=home and returns its combined output.
func ferry(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ferryBin, args...)
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installed returns a fresh data directory and a profile with ferry registered in it.
func installed(t *testing.T) (home, userData string) {
	t.Helper()
	home = browsertest.TempDir(t, "ferry-e2e-home-")
	userData = browsertest.TempDir(t, "ferry-e2e-profile-")
	if out, err := ferry(t, home, "install", "--browser", "chromium", "--user-data-dir", userData); err != nil {
		t.Fatalf("ferry install: %v\n%s", err, out)
	}
	manifest := filepath.Join(userData, "NativeMessagingHosts", buildinfo.HostName+".json")
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatalf("ferry install wrote no manifest: %v", err)
	}
	var m struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Path != ferryBin {
		t.Fatalf("manifest %s: path %q, want %q (err %v)", manifest, m.Path, ferryBin, err)
	}
	// The tests' servers listen on 127.0.0.1: as a person would, allow the browser
	// tools to open it without asking. Tests of private destinations use other
	// loopback names (localhost, 127.0.0.2), which stay unallowed.
	if out, err := ferry(t, home, "config", "set", "browser.allow_private_hosts", "127.0.0.1"); err != nil {
		t.Fatalf("ferry config set browser.allow_private_hosts: %v\n%s", err, out)
	}
	return home, userData
}

// version is what `ferry version` reports, the reference every surface must agree with.
func version(t *testing.T) (v string, protocol int) {
	t.Helper()
	out, err := ferry(t, browsertest.TempDir(t, "ferry-e2e-home-"), "version")
	if err != nil {
		t.Fatalf("ferry version: %v\n%s", err, out)
	}
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "ferry %s (protocol %d)", &v, &protocol); err != nil {
		t.Fatalf("ferry version printed %q, want \"ferry <version> (protocol <n>)\": %v", out, err)
	}
	return v, protocol
}

type session struct {
	t       *testing.T
	ctx     context.Context // the test's deadline
	home    string
	browser *browsertest.Browser
	sw      context.Context // attached to the extension's service worker
}

// start installs ferry into a fresh profile, launches Chromium with the extension (env
// added to its environment, which the hosts it starts inherit) and waits until the
// service worker exposes its host client. Everything stops when the test ends or
// timeout passes.
func start(t *testing.T, timeout time.Duration, env ...string) *session {
	t.Helper()
	return startWith(t, timeout, nil, env...)
}

// startWith is start with Chromium features enabled (WebMCP, say).
func startWith(t *testing.T, timeout time.Duration, features []string, env ...string) *session {
	t.Helper()
	browsertest.RequireChromium(t)
	home, userData := installed(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	logPath := filepath.Join(browsertest.TempDir(t, "ferry-e2e-log-"), "chromium.log")
	b, err := browsertest.Launch(ctx, browsertest.Options{
		UserDataDir:  userData,
		ExtensionDir: browsertest.ExtensionDir(),
		Env:          append([]string{"FERRY_HOME=" + home}, env...),
		Log:          logPath,
		Features:     features,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		if t.Failed() {
			browsertest.DumpTail(t, "chromium output (includes the host's stderr)", logPath, 60)
			matches, _ := filepath.Glob(filepath.Join(home, "*.log"))
			more, _ := filepath.Glob(filepath.Join(home, "*", "*.log"))
			for _, p := range append(matches, more...) {
				browsertest.DumpTail(t, "host log", p, 40)
			}
		}
	})
	if b.ExtensionID != buildinfo.ExtensionID {
		t.Fatalf("extension loads as %s, want the pinned %s: is the key in extension/manifest.json?",
			b.ExtensionID, buildinfo.ExtensionID)
	}
	sw, cancelSW, err := b.ServiceWorker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancelSW)
	if err := browsertest.WaitFor(ctx, sw, `typeof globalThis.ferryHost?.request === 'function'`); err != nil {
		t.Fatalf("the service worker never exposed globalThis.ferryHost: %v", err)
	}
	return &session{t: t, ctx: ctx, home: home, browser: b, sw: sw}
}

// outcome is how a ferryHost.request settled, as seen inside the service worker.
type outcome struct {
	OK      bool            `json:"ok"`
	Result  json.RawMessage `json:"result"`
	Reason  string          `json:"reason"`
	Message string          `json:"message"`
}

// settle is a JavaScript expression (a promise) that never rejects: rejection
// reasons are data the tests assert on, not exceptions.
func settle(call string) string {
	return `(` + call + `).then(result => ({ok: true, result}),
		e => ({ok: false, reason: String(e?.reason ?? ''), message: String(e?.message ?? e)}))`
}

func (s *session) request(method string, params any) outcome {
	s.t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		s.t.Fatal(err)
	}
	m, _ := json.Marshal(method)
	out, err := browsertest.Eval[outcome](s.sw, settle(`ferryHost.request(`+string(m)+`, `+string(p)+`)`))
	if err != nil {
		s.t.Fatalf("ferryHost.request(%s): %v", method, err)
	}
	return out
}

// must is request for calls that must succeed, decoding their result into v.
// runEnd is how a run ended, as runs.get reports it.
type runEnd struct {
	Status string `json:"status"`
	Error  string `json:"error"`
}

// waitRun polls runs.get until the run has ended, and fails t if it has not within
// the time given.
func (s *session) waitRun(t *testing.T, runID string, within time.Duration) runEnd {
	t.Helper()
	var got struct {
		Run runEnd `json:"run"`
	}
	deadline := time.Now().Add(within)
	for {
		s.must("runs.get", map[string]any{"run_id": runID}, &got)
		if got.Run.Status != "running" && got.Run.Status != "" {
			return got.Run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not end within %s: %+v", runID, within, got.Run)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *session) must(method string, params, v any) {
	s.t.Helper()
	out := s.request(method, params)
	if !out.OK {
		s.t.Fatalf("ferryHost.request(%s) rejected: reason %q: %s", method, out.Reason, out.Message)
	}
	if err := json.Unmarshal(out.Result, v); err != nil {
		s.t.Fatalf("%s result %s: %v", method, out.Result, err)
	}
}

type hostInfo struct {
	Name          string `json:"name"`
	Version       string `json:"version"`
	Protocol      int    `json:"protocol"`
	DataDir       string `json:"data_dir"`
	DatabasePath  string `json:"database_path"`
	DatabaseBytes int64  `json:"database_bytes"`
	LogPath       string `json:"log_path"`
	PID           int    `json:"pid"`
	UptimeMS      int64  `json:"uptime_ms"`
	StartedAt     string `json:"started_at"`
}

func (s *session) info() hostInfo {
	s.t.Helper()
	var hi hostInfo
	s.must("host.info", map[string]any{}, &hi)
	return hi
}

func TestOptionsPageShowsConnectedHost(t *testing.T) {
	want, _ := version(t)
	s := start(t, 45*time.Second)

	tab, cancel := chromedp.NewContext(s.browser.Ctx)
	defer cancel()
	url := "chrome-extension://" + buildinfo.ExtensionID + "/options/options.html"
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	if err := browsertest.WaitFor(s.ctx, tab, `document.querySelector('#host-status')?.dataset.state === 'connected'`); err != nil {
		state, _ := browsertest.Eval[string](tab, `String(document.querySelector('#host-status')?.dataset.state) + ': ' +
			String(document.querySelector('#host-status')?.textContent)`)
		t.Fatalf("options page never showed the host connected (#host-status %s): %v", state, err)
	}
	got, err := browsertest.Eval[string](tab, `document.querySelector('#host-version')?.textContent ?? ''`)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("#host-version: %q", got)
	if !strings.Contains(got, want) {
		t.Errorf("#host-version shows %q, want the version of `ferry version`, %q", got, want)
	}
}

func TestHostInfoThroughExtension(t *testing.T) {
	wantVersion, wantProtocol := version(t)
	s := start(t, 45*time.Second)
	hi := s.info()
	t.Logf("host.info: %+v", hi)
	if hi.Name != "ferry" || hi.Version != wantVersion || hi.Protocol != wantProtocol {
		t.Errorf("host.info = {name %q, version %q, protocol %d}, want {ferry, %s, %d}",
			hi.Name, hi.Version, hi.Protocol, wantVersion, wantProtocol)
	}
	if filepath.Clean(hi.DataDir) != filepath.Clean(s.home) {
		t.Errorf("host.info data_dir = %q, want FERRY_HOME %q (did the browser pass its environment on?)", hi.DataDir, s.home)
	}
	if !strings.HasPrefix(hi.DatabasePath, s.home) {
		t.Errorf("host.info database_path = %q, want it inside %q", hi.DatabasePath, s.home)
	}
	// The pid must be the binary that install registered, started by the browser,
	// and not some other ferry.
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", hi.PID)); err == nil && exe != ferryBin {
		t.Errorf("host.info pid %d runs %s, want %s", hi.PID, exe, ferryBin)
	}
}

func TestChunkedResponseArrivesIntact(t *testing.T) {
	const size = 5 << 20
	s := start(t, 60*time.Second)
	before := s.info()

	type digest struct {
		OK      bool   `json:"ok"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Length  int    `json:"length"`
		Bytes   int    `json:"bytes"`
		SHA256  string `json:"sha256"`
		Head    string `json:"head"`
	}
	// The digest is computed in the worker: shipping 5 MiB back over the DevTools
	// protocol would test chromedp rather than Ferry.
	got, err := browsertest.Eval[digest](s.sw, fmt.Sprintf(`(async () => {
		let r;
		try { r = await ferryHost.request('host.ping', {size: %d}, 60000); }
		catch (e) { return {ok: false, reason: String(e?.reason ?? ''), message: String(e?.message ?? e)}; }
		const p = r.payload;
		if (typeof p !== 'string') return {ok: false, message: 'payload is ' + typeof p};
		const bytes = new TextEncoder().encode(p);
		const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
		return {ok: true, length: p.length, bytes: bytes.length,
			sha256: Array.from(sum, b => b.toString(16).padStart(2, '0')).join(''), head: p.slice(0, 16)};
	})()`, size))
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK {
		t.Fatalf("host.ping {size: %d} rejected: reason %q: %s", size, got.Reason, got.Message)
	}
	// Asserted byte for byte so that a reassembly bug (a dropped, repeated or
	// reordered chunk, a split character) cannot pass unseen; the payload's quotes,
	// backslashes and three-byte characters make chunk boundaries hard.
	want := host.PingPayload(size)
	if len(want) != size {
		t.Fatalf("host.PingPayload(%d) is %d bytes", size, len(want))
	}
	sum := sha256.Sum256([]byte(want))
	t.Logf("5 MiB reply: %d bytes, %d characters, sha256 %s", got.Bytes, got.Length, got.SHA256)
	if got.Bytes != size || got.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("5 MiB payload arrived as %d bytes (%d chars), sha256 %s, head %q; want %d bytes, sha256 %x, head %q",
			got.Bytes, got.Length, got.SHA256, got.Head, size, sum, want[:16])
	}
	// Chrome closes the whole port on an oversized frame, so the same host still
	// answering proves every frame respected the limit.
	if after := s.info(); after.PID != before.PID {
		t.Errorf("host pid changed from %d to %d across the 5 MiB reply: the port was dropped", before.PID, after.PID)
	}
}

func TestHostExitFailsPendingCallAndReconnects(t *testing.T) {
	s := start(t, 45*time.Second)
	first := s.info()
	if first.PID <= 0 {
		t.Fatalf("host.info pid = %d", first.PID)
	}

	// Park the pending call in a global so that the host can be killed while the
	// worker waits on it.
	if _, err := browsertest.Eval[bool](s.sw,
		`(globalThis.__ferryPending = `+settle(`ferryHost.request('host.ping', {delay_ms: 5000})`)+`, true)`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the request reach the host
	killed := time.Now()
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill host pid %d: %v", first.PID, err)
	}
	got, err := browsertest.Eval[outcome](s.sw, `globalThis.__ferryPending`)
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(killed)
	t.Logf("pending call after SIGKILL of pid %d, %v later: reason %q, message %q", first.PID, waited.Round(time.Millisecond), got.Reason, got.Message)
	if got.OK {
		t.Fatalf("the pending host.ping succeeded (%s) although its host was killed", got.Result)
	}
	if got.Reason != "exited" {
		t.Errorf("pending call rejected with reason %q (%s), want \"exited\"", got.Reason, got.Message)
	}
	if strings.TrimSpace(got.Message) == "" || strings.EqualFold(strings.TrimSpace(got.Message), "exited") {
		t.Errorf("pending call rejected with message %q: want a sentence a person can act on", got.Message)
	}
	if waited > 3*time.Second {
		t.Errorf("the pending call failed %v after the kill: it should fail when the port drops, not at its timeout", waited)
	}

	second := s.info()
	t.Logf("reconnected: pid %d -> %d", first.PID, second.PID)
	if second.PID == first.PID {
		t.Errorf("host.info after the kill answers from pid %d, the killed host", second.PID)
	}
	state, err := browsertest.Eval[string](s.sw, `ferryHost.state().state`)
	if err != nil || state != "connected" {
		t.Errorf("ferryHost.state().state = %q (%v) after reconnecting, want connected", state, err)
	}
}

func TestDoctorHealthyAfterInstall(t *testing.T) {
	home, userData := installed(t)
	out, err := ferry(t, home, "doctor", "--user-data-dir", userData)
	if err != nil {
		t.Fatalf("ferry doctor --user-data-dir %s after install: %v\n%s", userData, err, out)
	}
}

// tabOf is the id of the open tab showing url.
func (s *session) tabOf(url string) int {
	s.t.Helper()
	tab, err := browsertest.Eval[int](s.sw, fmt.Sprintf(`chrome.tabs.query({}).then(ts => (ts.find(t => t.url === %q) || {id: 0}).id)`, url))
	if err != nil || tab == 0 {
		s.t.Fatalf("tab of %s: %d %v", url, tab, err)
	}
	return tab
}

// openTab opens url in a new tab (closed when the test ends) and returns the tab's
// chromedp context and its id.
func (s *session) openTab(url string) (context.Context, int) {
	s.t.Helper()
	page, cancel := chromedp.NewContext(s.browser.Ctx)
	s.t.Cleanup(cancel)
	if err := chromedp.Do(page, chromedp.Navigate(url)); err != nil {
		s.t.Fatal(err)
	}
	return page, s.tabOf(url)
}
