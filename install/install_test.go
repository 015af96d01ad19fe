package install

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/buildinfo"
)

func TestInstallThenDoctorHealthy(t *testing.T) {
	env, _ := testEnv(t, "linux")
	opts := Options{Browsers: []string{"chromium"}}
	rep := mustInstall(t, env, opts)
	file := filepath.Join(env.Home, ".config", "chromium", "NativeMessagingHosts", "ferry_host.json")
	if got := actions(rep)[file]; got != Written {
		t.Fatalf("install results = %v, want %s written", rep.Results, file)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("manifest mode = %v, want 0644", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(file)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("manifest is not JSON: %v\n%s", err, data)
	}
	if m["name"] != "ferry_host" || m["type"] != "stdio" || m["path"] != env.Exe || m["description"] == "" {
		t.Errorf("manifest = %s", data)
	}
	if o := m["allowed_origins"].([]any); len(o) != 1 || o[0] != "chrome-extension://"+buildinfo.ExtensionID+"/" {
		t.Errorf("allowed_origins = %v", o)
	}
	// No temp files left beside the manifest.
	entries, _ := os.ReadDir(filepath.Dir(file))
	if len(entries) != 1 {
		t.Errorf("NativeMessagingHosts holds %d entries, want only the manifest", len(entries))
	}

	r := runDoctor(t, env, DoctorOptions{})
	if !r.Healthy {
		t.Fatalf("doctor after install is not healthy:\n%s", reportText(r))
	}
	for _, name := range []string{"manifest", "host binary", "allowed origins"} {
		if _, ok := findCheck(r, "chromium", name, OK); !ok {
			t.Errorf("no ok %q check for chromium:\n%s", name, reportText(r))
		}
	}
	if _, ok := findCheck(r, "chrome", "manifest", Skip); !ok {
		t.Errorf("uninstalled, unregistered chrome should be skipped:\n%s", reportText(r))
	}
	for _, name := range []string{"data directory", "database", "log file", "registration"} {
		if _, ok := findCheck(r, "", name, OK); !ok {
			t.Errorf("no ok %q check:\n%s", name, reportText(r))
		}
	}
	if !strings.Contains(reportText(r), "✓ chromium host binary") {
		t.Errorf("text output lacks marks:\n%s", reportText(r))
	}
	var js struct {
		Healthy bool `json:"healthy"`
		Checks  []struct {
			Browser, Name, Status, Detail, Fix string
		} `json:"checks"`
	}
	var b strings.Builder
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b.String()), &js); err != nil || !js.Healthy || len(js.Checks) != len(r.Checks) {
		t.Errorf("JSON output %s (err %v)", b.String(), err)
	}
}

func TestInstallIsIdempotent(t *testing.T) {
	env, _ := testEnv(t, "linux")
	opts := Options{Browsers: []string{"chrome", "brave"}, ExtensionIDs: []string{"aaaabbbbccccddddeeeeffffgggghhhh"}}
	first := mustInstall(t, env, opts)
	second := mustInstall(t, env, opts)
	if len(second.Results) != 2 {
		t.Fatalf("results = %v", second.Results)
	}
	for _, r := range first.Results {
		if r.Action != Written {
			t.Errorf("first install: %v", r)
		}
	}
	for _, r := range second.Results {
		if r.Action != Unchanged {
			t.Errorf("second install: %v, want unchanged", r)
		}
	}
	if len(second.Notes) != 0 {
		t.Errorf("second install notes = %v, want none (ID already allowed)", second.Notes)
	}
	// A changed binary path rewrites.
	env.Exe = fakeBinary(t, filepath.Join(t.TempDir(), "other"), buildinfo.VersionLine())
	for _, r := range mustInstall(t, env, opts).Results {
		if r.Action != Written {
			t.Errorf("install with a new binary: %v, want written", r)
		}
	}
}

func TestUninstallRemovesExactlyWhatInstallWrote(t *testing.T) {
	env, _ := testEnv(t, "linux")
	opts := Options{Browsers: []string{"chrome", "chromium"}}
	mustInstall(t, env, opts)

	cfg := filepath.Join(env.Home, ".config")
	foreign := filepath.Join(cfg, "chromium", "NativeMessagingHosts", "com.example.other.json")
	if err := os.WriteFile(foreign, []byte(`{"name":"com.example.other"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A ferry_host.json that is not ours (another name inside) must survive too.
	vivaldi := filepath.Join(cfg, "vivaldi", "NativeMessagingHosts", "ferry_host.json")
	mkdir(t, filepath.Dir(vivaldi))
	if err := os.WriteFile(vivaldi, []byte(`{"name":"something_else"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	rep := mustUninstall(t, env, Options{})
	got := actions(rep)
	want := map[string]Action{
		filepath.Join(cfg, "google-chrome", "NativeMessagingHosts", "ferry_host.json"):                  Removed,
		filepath.Join(cfg, "chromium", "NativeMessagingHosts", "ferry_host.json"):                       Removed,
		filepath.Join(cfg, "microsoft-edge", "NativeMessagingHosts", "ferry_host.json"):                 NotPresent,
		filepath.Join(cfg, "BraveSoftware", "Brave-Browser", "NativeMessagingHosts", "ferry_host.json"): NotPresent,
		vivaldi: LeftAlone,
	}
	for loc, a := range want {
		if got[loc] != a {
			t.Errorf("%s: %q, want %q (all: %v)", loc, got[loc], a, rep.Results)
		}
	}
	for _, f := range []string{foreign, vivaldi} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("uninstall touched a foreign file %s: %v", f, err)
		}
	}
	for _, r := range mustUninstall(t, env, opts).Results {
		if r.Action != NotPresent {
			t.Errorf("second uninstall: %v, want not present", r)
		}
	}
}

func TestUserDataDir(t *testing.T) {
	env, _ := testEnv(t, "linux")
	profile := filepath.Join(t.TempDir(), "my profile")
	opts := Options{Browsers: []string{"chromium"}, UserDataDir: profile}
	rep := mustInstall(t, env, opts)
	file := filepath.Join(profile, "NativeMessagingHosts", "ferry_host.json")
	if len(rep.Results) != 1 || rep.Results[0].Location != file || rep.Results[0].Action != Written {
		t.Fatalf("results = %v, want only %s", rep.Results, file)
	}
	if _, err := os.Stat(filepath.Join(env.Home, ".config")); !os.IsNotExist(err) {
		t.Errorf("--user-data-dir also wrote into the home directory")
	}
	if r := runDoctor(t, env, DoctorOptions{UserDataDir: profile}); !r.Healthy {
		t.Fatalf("doctor --user-data-dir:\n%s", reportText(r))
	}
	if r := mustUninstall(t, env, opts); actions(r)[file] != Removed {
		t.Errorf("uninstall: %v", r.Results)
	}
	if _, err := Install(context.Background(), env, Options{UserDataDir: profile, System: true}); err == nil {
		t.Error("--system with --user-data-dir was accepted")
	}
}

func TestExtensionIDsMergeIntoSettingAndManifest(t *testing.T) {
	env, _ := testEnv(t, "linux")
	b, a := "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	profile := t.TempDir()
	rep := mustInstall(t, env, Options{UserDataDir: profile, ExtensionIDs: []string{b, "chrome-extension://" + a + "/", b, buildinfo.ExtensionID}})
	if len(rep.Notes) != 2 {
		t.Errorf("notes = %v, want one per new ID", rep.Notes)
	}
	// A later install without the flag keeps them: the setting is the source.
	mustInstall(t, env, Options{UserDataDir: profile, ExtensionIDs: []string{"cccccccccccccccccccccccccccccccc"}})

	st, err := OpenStorage(env.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	val, _, err := st.GetSetting(context.Background(), AllowedIDsSetting)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := `["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","cccccccccccccccccccccccccccccccc"]`; val != want {
		t.Errorf("setting = %s, want %s", val, want)
	}
	data, _ := os.ReadFile(filepath.Join(profile, "NativeMessagingHosts", "ferry_host.json"))
	m, _ := ParseManifest(data)
	want := []string{Origin(buildinfo.ExtensionID), Origin(a), Origin(b), Origin("cccccccccccccccccccccccccccccccc")}
	if !slices.Equal(m.AllowedOrigins, want) {
		t.Errorf("allowed_origins = %v, want %v", m.AllowedOrigins, want)
	}
	if r := runDoctor(t, env, DoctorOptions{UserDataDir: profile}); !r.Healthy {
		t.Errorf("doctor:\n%s", reportText(r))
	}

	// uninstall --extension-id takes an ID back out of the setting.
	rep = mustUninstall(t, env, Options{UserDataDir: profile, ExtensionIDs: []string{a}})
	if !strings.Contains(strings.Join(rep.Notes, "\n"), a+" removed") {
		t.Errorf("uninstall notes = %v", rep.Notes)
	}

	for _, bad := range []string{"short", "ABCDEFGHIJKLMNOPABCDEFGHIJKLMNOP", "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"} {
		_, err := Install(context.Background(), env, Options{UserDataDir: profile, ExtensionIDs: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), "32 letters a–p") {
			t.Errorf("ID %q: err = %v, want an explanation of the ID format", bad, err)
		}
	}
}

func TestDefaultBrowsersAreTheOnesFound(t *testing.T) {
	env, _ := testEnv(t, "linux")
	rep := mustInstall(t, env, Options{})
	if len(rep.Results) != len(Browsers) || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "no supported browser found") {
		t.Fatalf("with no browser found: notes %v results %v, want a note and all browsers", rep.Notes, rep.Results)
	}

	env, _ = testEnv(t, "linux")
	mkdir(t, filepath.Join(env.Home, ".config", "vivaldi"))
	env.LookPath = func(name string) (string, error) {
		if name == "microsoft-edge" {
			return "/usr/bin/microsoft-edge", nil
		}
		return "", os.ErrNotExist
	}
	rep = mustInstall(t, env, Options{})
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Browser)
	}
	if !slices.Equal(got, []string{"edge", "vivaldi"}) || len(rep.Notes) != 0 {
		t.Errorf("installed for %v (notes %v), want edge (on PATH) and vivaldi (profile folder)", got, rep.Notes)
	}

	if _, err := Install(context.Background(), env, Options{Browsers: []string{"firefox"}}); err == nil || !strings.Contains(err.Error(), "chrome, chromium") {
		t.Errorf("unknown browser: err = %v", err)
	}
}

func TestInstallRefusesMissingBinary(t *testing.T) {
	env, _ := testEnv(t, "linux")
	env.Exe = filepath.Join(t.TempDir(), "gone")
	if _, err := Install(context.Background(), env, Options{Browsers: []string{"chrome"}}); err == nil {
		t.Error("install registered a binary that does not exist")
	}
	env.Exe = "relative/ferry"
	if _, err := Install(context.Background(), env, Options{Browsers: []string{"chrome"}}); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative exe: err = %v", err)
	}
}
