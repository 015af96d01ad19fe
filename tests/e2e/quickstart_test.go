package e2e

// The README's first command, `go build -o ferry ./cmd/ferry && ./ferry demo`, run as
// a person runs it (the binary this package built, the same flags but --headless so
// it works without a display): Chromium comes up with the extension connected to the
// host, the demo page's actions registered, the toolbar button pinned, the terminal
// saying what to do next; Ctrl-C removes the temporary profile.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/tests/browsertest"
)

func TestQuickStartDemo(t *testing.T) {
	browsertest.RequireChromium(t)
	home := browsertest.TempDir(t, "ferry-quickstart-home-")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	cmd := exec.Command(ferryBin, "demo", "--headless", "--root", browsertest.RepoRoot(), "--chromium", browsertest.PinnedChromium(t))
	// FERRY_DEMO_REACT points at an empty folder so the test does not install React.
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home, "FERRY_DEMO_REACT="+filepath.Join(home, "react"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		lines []string
	)
	devtools := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if addr, ok := strings.CutPrefix(sc.Text(), "DevTools: "); ok {
				devtools <- addr
			}
		}
	}()
	printed := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGINT)
			cmd.Wait()
			<-done
		}
	}
	defer stop()

	var ws string
	select {
	case ws = <-devtools:
	case <-ctx.Done():
		t.Fatalf("ferry demo --headless printed no DevTools address:\n%s", printed())
	}
	actx, cancelAlloc := remote.NewAllocator(ctx, ws)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("attach to the demo's Chromium: %v", err)
	}

	// The page the demo opened: its actions reach the host through the extension.
	var page context.Context
	for page == nil {
		infos, err := chromedp.Targets(bctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range infos {
			if ti.Type == "page" && strings.HasSuffix(ti.URL, "/todo/") {
				var cancelPage context.CancelFunc
				page, cancelPage = chromedp.NewContext(bctx, chromedp.WithTargetID(ti.TargetID))
				defer cancelPage()
			}
		}
		if page == nil {
			select {
			case <-ctx.Done():
				t.Fatalf("the demo opened no /todo/ page (targets %v)", infos)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if err := browsertest.WaitFor(ctx, page, `typeof ferry === 'object' && document.getElementById('status')?.textContent.includes('connected')`); err != nil {
		t.Fatalf("the demo page never said the extension is connected: %v\n%s", err, printed())
	}

	// The extension's own view: its host client reached this host.
	b := &browsertest.Browser{Ctx: bctx, ExtensionID: buildinfo.ExtensionID}
	sw, cancelSW, err := b.ServiceWorker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cancelSW()
	info, err := browsertest.Eval[map[string]any](sw, `ferryHost.request('host.info')`)
	if err != nil {
		t.Fatalf("host.info through the extension: %v", err)
	}
	if info["data_dir"] != home || info["version"] != buildinfo.Version {
		t.Errorf("host.info = %v, want the data dir %s and version %s", info, home, buildinfo.Version)
	}

	text := printed()
	profile := ""
	for _, l := range strings.Split(text, "\n") {
		if p, ok := strings.CutPrefix(l, "Installing the host into a temporary Chromium profile "); ok {
			profile = p
		}
	}
	if profile == "" {
		t.Fatalf("the demo did not say where its profile is:\n%s", text)
	}
	// The toolbar button is pinned, so the side panel is one click away.
	prefs, err := os.ReadFile(filepath.Join(profile, "Default", "Preferences"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Extensions struct {
			Pinned []string `json:"pinned_extensions"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(prefs, &p); err != nil || len(p.Extensions.Pinned) == 0 || p.Extensions.Pinned[0] != buildinfo.ExtensionID {
		t.Errorf("Ferry is not pinned to the toolbar: %v %v", p.Extensions.Pinned, err)
	}
	// What to do next, and what stays behind.
	for _, want := range []string{
		"provider add openai --kind openai --base-url https://api.openai.com/v1 --model gpt-4o --api-key-stdin --default",
		"chrome-extension://" + buildinfo.ExtensionID + "/options/options.html",
		"Click Ferry's button in the toolbar",
		"Ferry's data directory " + home,
		"is removed when you stop the demo",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's terminal output lacks %q:\n%s", want, text)
		}
	}
	if os.Geteuid() == 0 && !strings.Contains(text, "--no-sandbox: its sandbox cannot start here (running as root)") {
		t.Errorf("running as root, the demo should say why it uses --no-sandbox:\n%s", text)
	}

	stop()
	if !strings.Contains(printed(), "Stopped. Removed the temporary profile") {
		t.Errorf("the demo did not say it stopped:\n%s", printed())
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Errorf("the temporary profile %s is still there after Ctrl-C (%v)", profile, err)
	}
}

// The same command on a machine without a display, as a person who skipped
// --headless runs it: Chromium dies at once, and the demo says so with Chromium's
// own reason and the flag to use, prints none of the steps that assume a browser,
// and exits non-zero.
func TestQuickStartDemoWithoutDisplay(t *testing.T) {
	browsertest.RequireChromium(t)
	home := browsertest.TempDir(t, "ferry-quickstart-home-")
	// A React install already in place, so the demo does not run npm.
	react := filepath.Join(home, "react")
	if err := os.MkdirAll(filepath.Join(react, "node_modules", "react", "umd"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ferryBin, "demo", "--root", browsertest.RepoRoot(), "--chromium", browsertest.PinnedChromium(t))
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DISPLAY=") && !strings.HasPrefix(kv, "WAYLAND_DISPLAY=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "FERRY_HOME="+home, "FERRY_DEMO_REACT="+react)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ferry demo without a display was still running after 60 s:\n%s\n%s", stdout.String(), stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("ferry demo without a display: %v, want a non-zero exit", err)
	}
	out, msg := stdout.String(), stderr.String()
	for _, want := range []string{
		"Chromium exited after",
		"Missing X server or $DISPLAY", // Chromium's own words, from its stderr
		"demo --headless",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	for _, never := range []string{"Next:", "Click Ferry's button", "Stopped."} {
		if strings.Contains(out, never) {
			t.Errorf("stdout says %q though Chromium never came up:\n%s", never, out)
		}
	}
}
