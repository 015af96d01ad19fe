package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

const demoUsage = `usage: ferry demo [--no-browser] [--headless] [--chromium PATH] [--port N] [--root DIR]

Serves the demo pages (examples/todo, examples/todo-react) on 127.0.0.1, installs
the host into a temporary Chromium profile and opens Chromium with the extension
loaded and pinned to the toolbar, at the demo. Ctrl-C stops everything and removes
the temporary profile.

  --no-browser     only serve the pages and print their URL
  --headless       start Chromium without a window (machines without a display, CI);
                   prints the DevTools address to drive it
  --chromium PATH  the Chromium to start (default: $FERRY_CHROMIUM, then chromium on PATH)
  --port N         the port to serve on (default: any free one)
  --root DIR       the Ferry source tree holding examples/ and extension/ (default: found
                   from the current directory or the binary's)
`

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	noBrowser := fs.Bool("no-browser", false, "")
	headless := fs.Bool("headless", false, "")
	chromium := fs.String("chromium", "", "")
	port := fs.Int("port", 0, "")
	root := fs.String("root", "", "")
	if done, code := parseFlags(fs, demoUsage, args, stdout, stderr); done {
		return code
	}
	if *root == "" {
		*root = findSourceRoot()
	}
	if *root == "" {
		fmt.Fprintln(stderr, "ferry demo: cannot find the Ferry source tree (examples/ and extension/); run it from the repository or pass --root DIR")
		return 1
	}
	ext := filepath.Join(*root, "extension")

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(stderr, "ferry demo: %v\n", err)
		return 1
	}
	reactDir := demoReactDir()
	if !*noBrowser {
		ensureDemoReact(*root, reactDir, stdout, stderr)
	}
	srv := &http.Server{Handler: demoHandler(*root, reactDir), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	url := base + "/todo/"
	fmt.Fprintf(stdout, "Serving the demo pages from %s on %s\n", filepath.Join(*root, "examples"), base)
	fmt.Fprintf(stdout, "  todo (plain page):  %s\n", url)
	if _, err := os.Stat(filepath.Join(reactDir, "node_modules", "react", "umd")); err == nil {
		fmt.Fprintf(stdout, "  todo (React):       %s/todo-react/\n", base)
	} else {
		fmt.Fprintf(stdout, "  todo (React):       %s/todo-react/ (needs React from npm: run scripts/demo-react)\n", base)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *noBrowser {
		fmt.Fprintln(stdout, "Press Ctrl-C to stop.")
		<-ctx.Done()
		return 0
	}

	bin := *chromium
	if bin == "" {
		bin = findChromium()
	}
	if bin == "" {
		fmt.Fprintln(stderr, "ferry demo: no Chromium found: pass --chromium PATH (or --no-browser to only serve the pages)")
		return 1
	}
	profile, err := os.MkdirTemp("", "ferry-demo-profile-")
	if err != nil {
		fmt.Fprintf(stderr, "ferry demo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(profile)
	fmt.Fprintf(stdout, "Installing the host into a temporary Chromium profile %s\n", profile)
	if code := cmdInstall([]string{"--browser", "chromium", "--user-data-dir", profile}, stdout, stderr); code != 0 {
		return code
	}
	if err := pinExtension(profile); err != nil {
		// Only the toolbar button's place depends on it: the extension still loads.
		fmt.Fprintf(stderr, "ferry demo: could not pin the extension to the toolbar (%v); find Ferry under the puzzle-piece button\n", err)
	}
	flags := []string{
		"--disable-gpu", "--disable-quic", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--load-extension=" + ext, "--disable-extensions-except=" + ext,
	}
	if why := sandboxUnavailable(); why != "" {
		fmt.Fprintf(stdout, "Starting Chromium with --no-sandbox: its sandbox cannot start here (%s)\n", why)
		flags = append(flags, "--no-sandbox")
	}
	if *headless {
		// Machines without a display are mostly containers, whose /dev/shm is tiny.
		flags = append(flags, "--headless=new", "--remote-debugging-port=0", "--disable-dev-shm-usage")
	}
	flags = append(flags, url)
	cmd := exec.Command(bin, flags...)
	cmd.Stdout = io.Discard
	// Chromium's stderr is where it says why it could not start (no display, a
	// broken profile, a missing library); its last lines are kept to say so.
	// Chromium's helpers may hold the pipe a moment after it exits.
	tail := newStderrTail(demoTailLines)
	cmd.Stderr = tail
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "ferry demo: starting %s: %v\n", bin, err)
		return 1
	}
	fmt.Fprintf(stdout, "Opened %s (pid %d) with the extension from %s at %s\n", bin, cmd.Process.Pid, ext, url)
	exited := make(chan error, 1)
	started := time.Now()
	go func() { exited <- cmd.Wait() }()
	// The "Next:" steps are printed only once Chromium has stayed up: a browser that
	// cannot open a window dies within a second, and telling the person to click its
	// toolbar then would be false.
	if *headless {
		select {
		case addr := <-tail.devtools:
			fmt.Fprintf(stdout, "DevTools: %s\n", addr)
		case err := <-exited:
			return chromiumDied(stderr, err, time.Since(started), tail, *headless)
		case <-ctx.Done():
			return stopChromium(cmd, exited, stdout, profile)
		case <-time.After(30 * time.Second):
			fmt.Fprintln(stderr, "ferry demo: Chromium printed no DevTools address within 30 s")
		}
	} else {
		select {
		case err := <-exited:
			return chromiumDied(stderr, err, time.Since(started), tail, *headless)
		case <-ctx.Done():
			return stopChromium(cmd, exited, stdout, profile)
		case <-time.After(demoSettle):
		}
	}
	printDemoNext(stdout, profile, reactDir)
	select {
	case <-ctx.Done():
		return stopChromium(cmd, exited, stdout, profile)
	case err := <-exited:
		if err != nil {
			// Closing the window exits 0; anything else is a crash worth naming.
			return chromiumDied(stderr, err, time.Since(started), tail, *headless)
		}
	}
	fmt.Fprintf(stdout, "Stopped. Removed the temporary profile %s.\n", profile)
	return 0
}

// demoSettle is how long Chromium must stay up before the demo calls it started:
// without a display it exits well within a second.
const demoSettle = 3 * time.Second

// demoTailLines is how many of Chromium's last stderr lines a failure shows.
const demoTailLines = 6

// stopChromium ends Chromium on Ctrl-C, by SIGTERM and then SIGKILL.
func stopChromium(cmd *exec.Cmd, exited <-chan error, stdout io.Writer, profile string) int {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
	fmt.Fprintf(stdout, "Stopped. Removed the temporary profile %s.\n", profile)
	return 0
}

// chromiumDied says that Chromium exited on its own, with its exit status and its
// last words, and what to try; the demo then exits 1 so scripts see the failure.
func chromiumDied(stderr io.Writer, err error, after time.Duration, tail *stderrTail, headless bool) int {
	status := "exit status 0"
	if err != nil {
		status = err.Error()
	}
	fmt.Fprintf(stderr, "ferry demo: Chromium exited after %.1f s (%s), before the demo could be used.\n", after.Seconds(), status)
	lines := tail.Lines()
	if len(lines) > 0 {
		fmt.Fprintln(stderr, "Its last lines on stderr:")
		for _, l := range lines {
			fmt.Fprintf(stderr, "  %s\n", l)
		}
	}
	if !headless {
		if noDisplay(lines) {
			fmt.Fprintf(stderr, "There is no display to open a window on. Run the demo without a window:\n  %s demo --headless\n", selfCommand())
		} else {
			fmt.Fprintf(stderr, "On a machine without a display, run the demo without a window: %s demo --headless\n", selfCommand())
		}
	}
	return 1
}

// noDisplay reports whether Chromium failed for want of a display: its own words
// for it, or no display named in the environment on a system that needs one.
func noDisplay(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, "Missing X server") || strings.Contains(l, "$DISPLAY") || strings.Contains(l, "Failed to connect to Wayland display") {
			return true
		}
	}
	return runtime.GOOS == "linux" && os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == ""
}

// demoHandler serves examples/ at /, the page SDK at /sdk/ and the React builds
// installed by scripts/demo-react at /vendor/.
func demoHandler(root, reactDir string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(filepath.Join(root, "examples"))))
	mux.Handle("/sdk/", http.StripPrefix("/sdk/", http.FileServer(http.Dir(filepath.Join(root, "extension", "sdk")))))
	mux.Handle("/vendor/", http.StripPrefix("/vendor/", http.FileServer(http.Dir(filepath.Join(reactDir, "node_modules")))))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

// demoReactDir is where scripts/demo-react installs React (FERRY_DEMO_REACT, else
// the user's cache folder).
func demoReactDir() string {
	if d := os.Getenv("FERRY_DEMO_REACT"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "ferry", "demo-react")
}

// ensureDemoReact runs scripts/demo-react when React is not installed yet; the
// plain demo works without it, so a failure is only reported.
func ensureDemoReact(root, dir string, stdout, stderr io.Writer) {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "react", "umd")); err == nil {
		return
	}
	script := filepath.Join(root, "scripts", "demo-react")
	fmt.Fprintf(stdout, "Installing React for the React demo with %s (npm)\n", script)
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "FERRY_DEMO_REACT="+dir)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "ferry demo: the React demo will not load (%v); the plain demo works\n", err)
	}
}

func findSourceRoot() string {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			if isFile(filepath.Join(dir, "examples", "todo", "index.html")) && isFile(filepath.Join(dir, "extension", "manifest.json")) {
				return dir
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func findChromium() string {
	if p := os.Getenv("FERRY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
