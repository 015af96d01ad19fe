package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/storage"
)

// sandboxUnavailable says why Chromium's sandbox cannot start on this machine, or ""
// when it can. Chromium refuses to start as root with its sandbox, and on Linux the
// sandbox needs unprivileged user namespaces unless the setuid helper is installed;
// only then is --no-sandbox worth its cost.
func sandboxUnavailable() string {
	if runtime.GOOS != "linux" {
		return ""
	}
	if os.Geteuid() == 0 {
		return "running as root"
	}
	if setuidHelper() {
		return ""
	}
	for _, c := range []struct{ file, off, why string }{
		{"/proc/sys/user/max_user_namespaces", "0", "user namespaces are off: user.max_user_namespaces is 0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0", "unprivileged user namespaces are off: kernel.unprivileged_userns_clone is 0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns is 1"},
	} {
		if b, err := os.ReadFile(c.file); err == nil && strings.TrimSpace(string(b)) == c.off {
			return c.why
		}
	}
	return ""
}

// setuidHelper reports whether Chromium's setuid sandbox helper is installed, which
// works without user namespaces.
func setuidHelper() bool {
	for _, p := range []string{"/usr/lib/chromium/chrome-sandbox", "/opt/google/chrome/chrome-sandbox"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeSetuid != 0 {
			return true
		}
	}
	return false
}

// pinExtension writes the new profile's preferences so that Ferry's toolbar button is
// pinned: a fresh profile hides extension buttons under the puzzle-piece menu, and
// the demo should leave the side panel one click away. Chromium reads the file at
// its first start and keeps everything else at its defaults.
func pinExtension(profile string) error {
	dir := filepath.Join(profile, "Default")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	prefs := map[string]any{
		"extensions": map[string]any{"pinned_extensions": []string{buildinfo.ExtensionID}},
	}
	b, err := json.Marshal(prefs)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "Preferences"), b, 0o600)
}

// stderrTail is Chromium's stderr as the demo reads it: it keeps the last lines, to
// say why Chromium died, and sends the DevTools address Chromium prints when started
// with --remote-debugging-port.
type stderrTail struct {
	devtools chan string
	mu       sync.Mutex
	max      int
	lines    []string
	partial  []byte
	sent     bool
}

func newStderrTail(max int) *stderrTail {
	return &stderrTail{devtools: make(chan string, 1), max: max}
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.line(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	// A line longer than this is not one a person reads; keep its start.
	if len(t.partial) > 4<<10 {
		t.line(string(t.partial))
		t.partial = nil
	}
	return len(p), nil
}

func (t *stderrTail) line(l string) {
	l = strings.TrimRight(l, "\r")
	if !t.sent {
		if _, addr, ok := strings.Cut(l, "DevTools listening on "); ok {
			t.devtools <- strings.TrimSpace(addr)
			t.sent = true
		}
	}
	if strings.TrimSpace(l) == "" {
		return
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// Lines returns the last lines written, the unterminated one included.
func (t *stderrTail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if l := strings.TrimSpace(string(t.partial)); l != "" {
		out = append(out, l)
		if len(out) > t.max {
			out = out[len(out)-t.max:]
		}
	}
	return out
}

// selfCommand is how the person would type this binary: ./ferry when it sits below
// the current directory, ferry otherwise.
func selfCommand() string {
	if exe, err := os.Executable(); err == nil {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, exe); err == nil && !strings.HasPrefix(rel, "..") {
				return "./" + filepath.ToSlash(rel)
			}
		}
	}
	return "ferry"
}

// printDemoNext tells the person what to do now that the demo is up, and what the
// demo leaves on the machine.
func printDemoNext(w io.Writer, profile, reactDir string) {
	dataDir, _ := storage.DefaultDataDir()
	provider := ""
	if db, err := storage.Open(dataDir); err == nil {
		if ps, err := model.List(context.Background(), db); err == nil {
			for _, p := range ps {
				if p.Default || provider == "" {
					provider = p.ID
				}
			}
		}
		db.Close()
	}
	self := selfCommand()
	fmt.Fprintln(w, "\nNext:")
	if provider == "" {
		fmt.Fprintln(w, "  1. Add a model provider, in another terminal (the key is read from stdin and kept in the host):")
		fmt.Fprintf(w, "       echo \"$OPENAI_API_KEY\" | %s provider add openai --kind openai --base-url https://api.openai.com/v1 --model gpt-4o --api-key-stdin --default\n", self)
		fmt.Fprintf(w, "     (Anthropic: --kind anthropic --base-url https://api.anthropic.com; Ollama: --base-url http://localhost:11434/v1 with no key),\n")
		fmt.Fprintf(w, "     or in the extension's options page: chrome-extension://%s/options/options.html\n", buildinfo.ExtensionID)
	} else {
		fmt.Fprintf(w, "  1. The model provider %q is set up (`%s provider list` shows it).\n", provider, self)
	}
	fmt.Fprintln(w, "  2. Click Ferry's button in the toolbar: the side panel opens beside the demo.")
	fmt.Fprintln(w, "  3. Ask it: add \"prepare tomorrow's agenda\" to my todos. Ferry calls the page's own add_task action.")
	fmt.Fprintln(w, "\nWhat stays on this machine:")
	fmt.Fprintf(w, "  - the temporary Chromium profile %s is removed when you stop the demo;\n", profile)
	fmt.Fprintf(w, "  - Ferry's data directory %s (settings, providers, conversations, audit log) stays; remove it with: rm -rf %q\n", dataDir, dataDir)
	fmt.Fprintf(w, "  - React for the React demo, if installed, is cached in %s; remove it with: rm -rf %q\n", reactDir, reactDir)
	fmt.Fprintln(w, "\nPress Ctrl-C (or close the browser) to stop.")
}
