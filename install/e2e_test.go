package install

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCommandsEndToEnd drives the real ferry binary: its own path in the manifest, its
// own `version` answering doctor, its flags and exit codes.
func TestCommandsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ferry binary; skipped with -short")
	}
	if _, err := os.Stat("../cmd/ferry/main.go"); err != nil {
		t.Skip("cmd/ferry/main.go does not exist yet, so there is no ferry command to run")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "bin", "ferry")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/ferry")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ferry: %v\n%s", err, out)
	}
	// A symlink to the binary: the manifest must name the real file.
	link := filepath.Join(root, "ferry-link")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	profile := filepath.Join(root, "profile")
	env := append(os.Environ(), "HOME="+home, "FERRY_HOME="+filepath.Join(root, "data"), "XDG_CONFIG_HOME=", "PATH=/nonexistent")
	run := func(want int, args ...string) string {
		t.Helper()
		cmd := exec.Command(link, args...)
		cmd.Env = env
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want {
			t.Fatalf("ferry %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
		}
		return string(out)
	}

	out := run(0, "install", "--browser", "chromium", "--user-data-dir", profile, "--extension-id", "abcdefghijklmnopabcdefghijklmnop")
	manifest := filepath.Join(profile, "NativeMessagingHosts", "ferry_host.json")
	if !strings.Contains(out, "chromium  written     "+manifest) {
		t.Errorf("install output:\n%s", out)
	}
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ParseManifest(data)
	if m.Path != bin {
		t.Errorf("manifest path = %s, want the resolved binary %s", m.Path, bin)
	}
	if out := run(0, "install", "--browser", "chromium", "--user-data-dir", profile); !strings.Contains(out, "unchanged") {
		t.Errorf("second install:\n%s", out)
	}

	var rep DoctorReport
	if err := json.Unmarshal([]byte(run(0, "doctor", "--user-data-dir", profile, "--json")), &rep); err != nil || !rep.Healthy {
		t.Fatalf("doctor --json: %+v %v", rep, err)
	}
	if out := run(0, "doctor", "--user-data-dir", profile); !strings.Contains(out, "✓") || !strings.Contains(out, "healthy") {
		t.Errorf("doctor text:\n%s", out)
	}
	// Nothing registered in the home directory at all: unhealthy, fix `ferry install`.
	if out := run(1, "doctor"); !strings.Contains(out, "fix: ferry install\n") {
		t.Errorf("doctor with nothing registered:\n%s", out)
	}

	if out := run(0, "uninstall", "--user-data-dir", profile); !strings.Contains(out, "removed") {
		t.Errorf("uninstall:\n%s", out)
	}
	if _, err := os.Stat(manifest); !os.IsNotExist(err) {
		t.Errorf("manifest still there after uninstall")
	}
	if out := run(1, "doctor", "--user-data-dir", profile, "--browser", "chromium"); !strings.Contains(out, "fix: ferry install --browser chromium --user-data-dir "+profile) {
		t.Errorf("doctor after uninstall:\n%s", out)
	}

	if out := run(0, "install", "-h"); !strings.Contains(out, "usage: ferry install") {
		t.Errorf("install -h:\n%s", out)
	}
	run(2, "install", "--browser", "firefox")
	run(2, "doctor", "stray")
}
