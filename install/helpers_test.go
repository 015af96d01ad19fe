package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
)

// fakeRegistry is an in-memory Windows registry.
type fakeRegistry struct {
	keys map[string]string // "HKCU\\Software\\..." → default value
}

func newFakeRegistry() *fakeRegistry { return &fakeRegistry{keys: map[string]string{}} }

func regName(root RegRoot, key string) string { return root.String() + `\` + key }

func (f *fakeRegistry) Default(root RegRoot, key string) (string, bool, error) {
	v, ok := f.keys[regName(root, key)]
	return v, ok, nil
}

func (f *fakeRegistry) SetDefault(root RegRoot, key, value string) error {
	f.keys[regName(root, key)] = value
	return nil
}

func (f *fakeRegistry) DeleteKey(root RegRoot, key string) error {
	delete(f.keys, regName(root, key))
	return nil
}

// fakeBinary writes a script that answers `version` like a ferry of another build.
func fakeBinary(t *testing.T, dir, versionLine string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ferry")
	script := "#!/bin/sh\nif [ \"$1\" = version ]; then echo '" + versionLine + "'; exit 0; fi\nexit 3\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// testEnv is an Env with a fake home, no browser found, the real database in a temp
// data directory and a fake ferry binary of this very version.
func testEnv(t *testing.T, goos string) (*Env, map[string]string) {
	t.Helper()
	root := t.TempDir()
	vars := map[string]string{}
	env := &Env{
		GOOS:           goos,
		Home:           filepath.Join(root, "home"),
		Getenv:         func(k string) string { return vars[k] },
		DataDir:        filepath.Join(root, "data"),
		Exe:            fakeBinary(t, filepath.Join(root, "bin"), buildinfo.VersionLine()),
		OpenStore:      OpenStorage,
		VersionTimeout: 10 * time.Second,
	}
	if err := os.MkdirAll(env.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	if goos == "windows" {
		env.Registry = newFakeRegistry()
		vars["LOCALAPPDATA"] = filepath.Join(env.Home, "AppData", "Local")
	}
	return env, vars
}

func mustInstall(t *testing.T, env *Env, opts Options) *Report {
	t.Helper()
	rep, err := Install(context.Background(), env, opts)
	if err != nil {
		t.Fatalf("Install(%+v): %v", opts, err)
	}
	return rep
}

func mustUninstall(t *testing.T, env *Env, opts Options) *Report {
	t.Helper()
	rep, err := Uninstall(context.Background(), env, opts)
	if err != nil {
		t.Fatalf("Uninstall(%+v): %v", opts, err)
	}
	return rep
}

func actions(rep *Report) map[string]Action {
	m := map[string]Action{}
	for _, r := range rep.Results {
		m[r.Location] = r.Action
	}
	return m
}

func runDoctor(t *testing.T, env *Env, opts DoctorOptions) *DoctorReport {
	t.Helper()
	return Doctor(context.Background(), env, opts)
}

func reportText(r *DoctorReport) string {
	var b strings.Builder
	r.WriteText(&b)
	return b.String()
}

// findCheck returns the first check with that browser, name and status.
func findCheck(r *DoctorReport, browser, name string, status Status) (Check, bool) {
	for _, c := range r.Checks {
		if c.Browser == browser && c.Name == name && c.Status == status {
			return c, true
		}
	}
	return Check{}, false
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
