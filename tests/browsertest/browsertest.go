// Package browsertest starts a real headless Chromium with Ferry's extension loaded and
// a native host registered in its profile, and evaluates JavaScript in the extension's
// service worker. The end-to-end tests and the browser benchmark share it so that both
// exercise the one launch recipe (Launch's flags) under which headless Chromium loads
// an unpacked extension and reaches a host registered in its profile.
package browsertest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/ferryhq/ferry/buildinfo"
)

// DefaultChromium is where Debian's chromium package puts the browser;
// FERRY_CHROMIUM overrides it.
const DefaultChromium = "/usr/bin/chromium"

// ChromiumPath is the browser the tests launch.
func ChromiumPath() string {
	if p := os.Getenv("FERRY_CHROMIUM"); p != "" {
		return p
	}
	return DefaultChromium
}

// RequireChromium fails the test when the browser is missing, because a silent skip
// would let a broken CI machine report green; FERRY_SKIP_BROWSER=1 opts out on
// machines that cannot have a browser.
func RequireChromium(tb testing.TB) string {
	tb.Helper()
	p := ChromiumPath()
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("FERRY_SKIP_BROWSER") == "1" {
			tb.Skipf("no browser at %s and FERRY_SKIP_BROWSER=1", p)
		}
		tb.Fatalf("no browser at %s: install it (apt-get install -y chromium chromium-driver), "+
			"point FERRY_CHROMIUM at one, or set FERRY_SKIP_BROWSER=1 to skip browser tests", p)
	}
	return p
}

// TempDir is t.TempDir for directories that a native host may still be writing to
// for a moment after the browser is gone (the host exits only when it sees its stdin
// close); t.TempDir would fail the test over that.
func TempDir(tb testing.TB, pattern string) string {
	tb.Helper()
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for i := 0; i < 20 && os.RemoveAll(d) != nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
	})
	return d
}

// RepoRoot is the module root, found from this file's location so that tests work
// whatever directory `go test` runs them in.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Build compiles the package pkg (relative to the repo root, e.g. "./cmd/ferry") into
// dir and returns the binary's absolute path. It builds as scripts/release does,
// without cgo: a static binary, which starts without the dynamic loader and libc.
func Build(pkg, dir string) (string, error) {
	out, err := filepath.Abs(filepath.Join(dir, filepath.Base(pkg)))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// ExtensionDir is the unpacked extension in the repository.
func ExtensionDir() string { return filepath.Join(RepoRoot(), "extension") }

// ExtensionID is the ID Chromium gives the unpacked extension at dir: the pinned ID
// when its manifest carries a key, otherwise the one derived from its path (which is
// what scratch extensions used while developing get).
func ExtensionID(dir string) string {
	var m struct {
		Key string `json:"key"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	if m.Key != "" {
		return buildinfo.ExtensionID
	}
	abs, _ := filepath.Abs(dir)
	sum := sha256.Sum256([]byte(abs))
	id := []byte(hex.EncodeToString(sum[:16]))
	for i, c := range id {
		if c <= '9' {
			id[i] = 'a' + c - '0'
		} else {
			id[i] = 'a' + c - 'a' + 10
		}
	}
	return string(id)
}

// RegisterHost writes a native messaging manifest for a host named name into the
// profile, the way `ferry install --user-data-dir` does, so a second host (the raw
// echo yardstick) can sit beside ferry_host.
func RegisterHost(userDataDir, name, binary, extensionID string) error {
	dir := filepath.Join(userDataDir, "NativeMessagingHosts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(map[string]any{
		"name":            name,
		"description":     name + " (test host)",
		"path":            binary,
		"type":            "stdio",
		"allowed_origins": []string{"chrome-extension://" + extensionID + "/"},
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644)
}

// Options describe one browser launch.
type Options struct {
	UserDataDir  string
	ExtensionDir string
	// Env adds NAME=value pairs to Chromium's environment; the native hosts it
	// starts inherit them (FERRY_HOME in particular).
	Env []string
	// Log receives Chromium's output, which includes the hosts' stderr.
	Log string
	// Features are Chromium features to enable (--enable-features), e.g. WebMCP.
	Features []string
	// NoExtension launches the same browser without Ferry's extension: the baseline
	// a page's behaviour with Ferry is compared against.
	NoExtension bool
	// Proxy replaces the closed loopback port every address off the machine is sent
	// to (NetworkFlags): a test that records those attempts listens there. It must
	// be a loopback address; Launch refuses any other.
	Proxy string
}

// ClosedProxy is where a test browser sends every request for an address that is not
// loopback: the discard port on loopback, where nothing listens, so the request fails
// on this machine instead of leaving it.
const ClosedProxy = "http://127.0.0.1:9"

// NetworkFlags are the Chromium switches that keep a test browser on this machine,
// with proxy as its proxy (ClosedProxy unless a test records there):
//
//   - every host name but localhost (and every address but 127.0.0.1 to 127.0.0.9)
//     resolves to nothing, so no DNS query leaves;
//   - every URL goes through the proxy, so an address a page names outright (an
//     image or a CSS background from a public IP, which no resolver sees) reaches
//     the closed port instead; loopback addresses and localhost alone bypass it,
//     and the implicit bypass of link-local addresses (169.254.0.0/16, the cloud
//     metadata service among them) is removed with <-loopback;
//   - WebRTC may not send UDP outside the proxy, which it cannot use, so no STUN
//     or peer packet leaves either.
func NetworkFlags(proxy string) []string {
	return []string{
		"--host-resolver-rules=" + resolverRules(),
		"--proxy-server=" + proxy,
		"--proxy-bypass-list=<-loopback>;localhost;*.localhost;127.0.0.0/8;[::1]",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
	}
}

// resolverRules maps every host to nothing but localhost and the loopback addresses
// the tests listen on (127.0.0.1 to 127.0.0.9: the rules apply to IP literals too, so
// each is excepted by name).
func resolverRules() string {
	rules := []string{"MAP * ~NOTFOUND", "EXCLUDE localhost"}
	for i := 1; i <= 9; i++ {
		rules = append(rules, fmt.Sprintf("EXCLUDE 127.0.0.%d", i))
	}
	return strings.Join(rules, ", ")
}

// checkLoopbackProxy refuses a proxy that is not on loopback: the flags' whole
// point is that nothing leaves the machine.
func checkLoopbackProxy(proxy string) error {
	u, err := url.Parse(proxy)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("proxy %q is not a URL", proxy)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err != nil || !ip.IsLoopback() {
		return fmt.Errorf("proxy %q is not a loopback address", proxy)
	}
	return nil
}

// NetworkOptions are NetworkFlags as chromedp options, for a test that starts its
// own allocator rather than Launch.
func NetworkOptions(proxy string) []chromedp.ExecAllocatorOption {
	var opts []chromedp.ExecAllocatorOption
	for _, f := range NetworkFlags(proxy) {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		opts = append(opts, chromedp.Flag(name, value))
	}
	return opts
}

// PinnedChromium writes a launcher that starts ChromiumPath with NetworkFlags and
// returns its path, for tests whose browser another program starts (ferry demo,
// @playwright/mcp), so that those browsers stay on this machine too.
func PinnedChromium(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/sh\nexec " + shellQuote(RequireChromium(tb)))
	for _, f := range NetworkFlags(ClosedProxy) {
		b.WriteString(" " + shellQuote(f))
	}
	b.WriteString(" \"$@\"\n")
	p := filepath.Join(TempDir(tb, "ferry-chromium-"), "chromium")
	if err := os.WriteFile(p, []byte(b.String()), 0o755); err != nil {
		tb.Fatal(err)
	}
	return p
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Browser is one running Chromium.
type Browser struct {
	Ctx         context.Context // the browser's first tab; parent of every other context
	ExtensionID string
	UserDataDir string
	cancel      []context.CancelFunc
	logFile     *os.File
}

// Launch starts Chromium. The browser lives until Close or until ctx ends.
func Launch(ctx context.Context, o Options) (*Browser, error) {
	ext, err := filepath.Abs(o.ExtensionDir)
	if err != nil && !o.NoExtension {
		return nil, err
	}
	// chromedp.DefaultExecAllocatorOptions carries --disable-extensions, which
	// would silently unload the extension under test, so the list is the recipe
	// that works (headless=new, no-sandbox, disable-gpu, disable-quic, no-first-run,
	// the profile and the extension) plus flags that only keep a container quiet.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath()),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("no-sandbox", true), // Chromium refuses to run as root with its sandbox
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), // /dev/shm is tiny in containers
		chromedp.Flag("user-data-dir", o.UserDataDir),
		chromedp.Env(o.Env...),
	}
	proxy := o.Proxy
	if proxy == "" {
		proxy = ClosedProxy
	}
	if err := checkLoopbackProxy(proxy); err != nil {
		return nil, err
	}
	opts = append(opts, NetworkOptions(proxy)...)
	if o.NoExtension {
		opts = append(opts, chromedp.Flag("disable-extensions", true))
	} else {
		opts = append(opts, chromedp.Flag("load-extension", ext), chromedp.Flag("disable-extensions-except", ext))
	}
	if len(o.Features) > 0 {
		opts = append(opts, chromedp.Flag("enable-features", strings.Join(o.Features, ",")))
	}
	b := &Browser{UserDataDir: o.UserDataDir}
	if !o.NoExtension {
		b.ExtensionID = ExtensionID(ext)
	}
	if o.Log != "" {
		if b.logFile, err = os.Create(o.Log); err != nil {
			return nil, err
		}
		opts = append(opts, chromedp.CombinedOutput(b.logFile))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	b.cancel = []context.CancelFunc{cancelBrowser, cancelAlloc}
	b.Ctx = bctx
	// chromedp ties the browser's life to the context of the first Run, so it is
	// started here on bctx (which ends with ctx) rather than lazily by some later
	// call that carries a short deadline of its own.
	if err := chromedp.Do(bctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("start %s: %w", ChromiumPath(), err)
	}
	return b, nil
}

// Close stops the browser (and with it the native hosts it started, whose stdin
// closes) and waits for the process to exit.
func (b *Browser) Close() {
	for _, c := range b.cancel {
		c()
	}
	if b.logFile != nil {
		b.logFile.Close()
	}
}

// ServiceWorker waits until the extension's service worker is running and returns a
// context attached to it. The worker registers a moment after startup, so the target
// list is polled.
func (b *Browser) ServiceWorker(ctx context.Context) (context.Context, context.CancelFunc, error) {
	prefix := "chrome-extension://" + b.ExtensionID + "/"
	var seen []string
	for {
		infos, err := chromedp.Targets(b.Ctx)
		if err != nil {
			return nil, nil, err
		}
		seen = seen[:0]
		for _, ti := range infos {
			seen = append(seen, ti.Type+" "+ti.URL)
			if ti.Type == "service_worker" && strings.HasPrefix(ti.URL, prefix) {
				return b.attach(ctx, ti.TargetID)
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("no service worker of extension %s appeared (targets: %v): %w",
				b.ExtensionID, seen, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *Browser) attach(ctx context.Context, id target.ID) (context.Context, context.CancelFunc, error) {
	sw, cancel := chromedp.NewContext(b.Ctx, chromedp.WithTargetID(id))
	if err := chromedp.Do(sw); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("attach to service worker: %w", err)
	}
	// The target can be listed before the worker's script has run: an early
	// evaluation then sees a scope without even the chrome namespace.
	if err := WaitFor(ctx, sw, `typeof chrome === 'object' && typeof chrome.runtime?.id === 'string'`); err != nil {
		cancel()
		return nil, nil, err
	}
	return sw, cancel, nil
}

// WaitFor polls the JavaScript expression cond in the target of tctx until it is
// true, giving up when ctx ends.
func WaitFor(ctx, tctx context.Context, cond string) error {
	var last error
	for {
		ok, err := Eval[bool](tctx, "!!("+cond+")")
		if err == nil && ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", short(cond), ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", short(cond), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Eval evaluates expr in the target of ctx (a context attached to a target, or one
// derived from it with a deadline), awaits it if it is a promise, and decodes its
// JSON value into T.
func Eval[T any](ctx context.Context, expr string) (T, error) {
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	var ee *chromedp.ExceptionError
	if errors.As(err, &ee) {
		return v, fmt.Errorf("javascript threw: %w\n  in: %s", err, short(expr))
	}
	if err != nil {
		return v, fmt.Errorf("evaluate %q: %w", short(expr), err)
	}
	return v, nil
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// DumpTail logs the last n lines of the file at path, for the story behind a failure.
func DumpTail(t testing.TB, what, path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("--- %s, %s (last %d lines) ---\n%s", what, path, len(lines), strings.Join(lines, "\n"))
}
