package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each case breaks a healthy installation one way; doctor must fail (or warn) on the
// named check, with a fix that repairs exactly that.
func TestDoctorFindsEachProblemWithItsFix(t *testing.T) {
	otherID := "abcdefghijklmnopabcdefghijklmnop"
	cases := []struct {
		name    string
		break_  func(t *testing.T, env *Env, manifest string)
		browser string
		check   string
		status  Status
		fix     string // substring the fix must contain
	}{
		{
			name:    "manifest missing",
			break_:  func(t *testing.T, env *Env, manifest string) { os.Remove(manifest) },
			browser: "chromium", check: "manifest", status: Fail,
			fix: "ferry install --browser chromium",
		},
		{
			name: "manifest not JSON",
			break_: func(t *testing.T, env *Env, manifest string) {
				os.WriteFile(manifest, []byte("{not json"), 0o644)
			},
			browser: "chromium", check: "manifest", status: Fail,
			fix: "ferry install --browser chromium",
		},
		{
			name:    "binary missing",
			break_:  func(t *testing.T, env *Env, manifest string) { os.Remove(env.Exe) },
			browser: "chromium", check: "host binary", status: Fail,
			fix: "ferry install --browser chromium",
		},
		{
			name:    "binary not executable",
			break_:  func(t *testing.T, env *Env, manifest string) { os.Chmod(env.Exe, 0o644) },
			browser: "chromium", check: "host binary", status: Fail,
			fix: "chmod +x ",
		},
		{
			name: "binary of another version",
			break_: func(t *testing.T, env *Env, manifest string) {
				fakeBinary(t, filepath.Dir(env.Exe), "ferry 0.0.1-old (protocol 0)")
			},
			browser: "chromium", check: "host binary", status: Fail,
			fix: "ferry install --browser chromium",
		},
		{
			name: "wrong extension ID",
			break_: func(t *testing.T, env *Env, manifest string) {
				rewrite(t, manifest, func(m *Manifest) { m.AllowedOrigins = []string{Origin(otherID)} })
			},
			browser: "chromium", check: "allowed origins", status: Fail,
			fix: "ferry install --browser chromium",
		},
		{
			name: "an origin the host would refuse",
			break_: func(t *testing.T, env *Env, manifest string) {
				rewrite(t, manifest, func(m *Manifest) { m.AllowedOrigins = append(m.AllowedOrigins, Origin(otherID)) })
			},
			browser: "chromium", check: "allowed origins", status: Warn,
			fix: "ferry install --browser chromium --extension-id " + otherID,
		},
		{
			name: "wrong host name",
			break_: func(t *testing.T, env *Env, manifest string) {
				rewrite(t, manifest, func(m *Manifest) { m.Name = "other_host" })
			},
			browser: "chromium", check: "manifest", status: Fail,
			fix: "ferry install --browser chromium",
		},
		{
			name: "data directory is a file",
			break_: func(t *testing.T, env *Env, manifest string) {
				env.DataDir = filepath.Join(t.TempDir(), "datafile")
				os.WriteFile(env.DataDir, []byte("x"), 0o600)
			},
			check: "data directory", status: Fail,
			fix: "mv ",
		},
		{
			name: "data directory cannot be created",
			break_: func(t *testing.T, env *Env, manifest string) {
				// Under a regular file even root cannot create a directory.
				blocker := filepath.Join(t.TempDir(), "blocker")
				os.WriteFile(blocker, []byte("x"), 0o600)
				env.DataDir = filepath.Join(blocker, "ferry")
			},
			check: "data directory", status: Fail,
			fix: "mkdir -p ",
		},
		{
			name: "log file location unwritable",
			break_: func(t *testing.T, env *Env, manifest string) {
				// logs/ as a regular file stops the log whoever we run as.
				logs := filepath.Join(env.DataDir, "logs")
				os.RemoveAll(logs)
				os.WriteFile(logs, []byte("x"), 0o600)
			},
			check: "log file", status: Fail,
			fix: "chmod u+w ",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := testEnv(t, "linux")
			mustInstall(t, env, Options{Browsers: []string{"chromium"}})
			manifest := filepath.Join(env.Home, ".config", "chromium", "NativeMessagingHosts", "ferry_host.json")
			if r := runDoctor(t, env, DoctorOptions{Browsers: []string{"chromium"}}); !r.Healthy {
				t.Fatalf("healthy install reported unhealthy:\n%s", reportText(r))
			}
			tc.break_(t, env, manifest)
			r := runDoctor(t, env, DoctorOptions{Browsers: []string{"chromium"}})
			if wantHealthy := tc.status != Fail; r.Healthy != wantHealthy {
				t.Errorf("healthy = %v, want %v:\n%s", r.Healthy, wantHealthy, reportText(r))
			}
			c, ok := findCheck(r, tc.browser, tc.check, tc.status)
			if !ok {
				t.Fatalf("no %s %q check for %q:\n%s", tc.status, tc.check, tc.browser, reportText(r))
			}
			if !strings.Contains(c.Fix, tc.fix) || c.Detail == "" {
				t.Errorf("check %+v: fix should contain %q", c, tc.fix)
			}
			if !strings.Contains(reportText(r), "fix: "+c.Fix) {
				t.Errorf("text output does not show the fix:\n%s", reportText(r))
			}
		})
	}
}

func rewrite(t *testing.T, path string, change func(*Manifest)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	change(&m)
	if err := os.WriteFile(path, m.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// chmod cannot stop root, so under root this case is covered by the "data directory
// is a file" and "cannot be created" cases above instead.
func TestDoctorUnwritableDataDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, where chmod 0500 does not stop writes; unwritable data directories are covered as root by the is-a-file and cannot-be-created cases of TestDoctorFindsEachProblemWithItsFix")
	}
	env, _ := testEnv(t, "linux")
	mustInstall(t, env, Options{Browsers: []string{"chromium"}})
	if err := os.Chmod(env.DataDir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(env.DataDir, 0o700) })
	r := runDoctor(t, env, DoctorOptions{})
	c, ok := findCheck(r, "", "data directory", Fail)
	if r.Healthy || !ok || c.Fix != "chmod u+w "+env.DataDir {
		t.Errorf("check %+v:\n%s", c, reportText(r))
	}
}

func TestDoctorWithNothingRegistered(t *testing.T) {
	env, _ := testEnv(t, "linux")
	mkdir(t, filepath.Join(env.Home, ".config", "google-chrome")) // Chrome is installed
	r := runDoctor(t, env, DoctorOptions{})
	if r.Healthy {
		t.Fatalf("healthy with nothing registered:\n%s", reportText(r))
	}
	if c, ok := findCheck(r, "", "registration", Fail); !ok || c.Fix != "ferry install" {
		t.Errorf("registration check %+v:\n%s", c, reportText(r))
	}
	if c, ok := findCheck(r, "chrome", "manifest", Warn); !ok || c.Fix != "ferry install --browser chrome" {
		t.Errorf("installed but unregistered chrome: %+v\n%s", c, reportText(r))
	}
	for _, b := range []string{"chromium", "edge", "brave", "vivaldi"} {
		if _, ok := findCheck(r, b, "manifest", Skip); !ok {
			t.Errorf("%s should be skipped:\n%s", b, reportText(r))
		}
	}

	// Missing from a profile, the fix names the profile.
	profile := filepath.Join(t.TempDir(), "p")
	r = runDoctor(t, env, DoctorOptions{Browsers: []string{"chromium"}, UserDataDir: profile})
	if c, ok := findCheck(r, "chromium", "manifest", Fail); !ok || c.Fix != "ferry install --browser chromium --user-data-dir "+profile {
		t.Errorf("profile check %+v:\n%s", c, reportText(r))
	}
}

func TestDoctorSystemManifest(t *testing.T) {
	// A Windows-shaped env keeps the "system" level inside the temp dir (beside the
	// binary), so this runs without root.
	env, _ := testEnv(t, "windows")
	mustInstall(t, env, Options{Browsers: []string{"edge"}, System: true})
	r := runDoctor(t, env, DoctorOptions{Browsers: []string{"edge"}})
	if !r.Healthy {
		t.Fatalf("system install unhealthy:\n%s", reportText(r))
	}
	os.Remove(env.Exe)
	r = runDoctor(t, env, DoctorOptions{Browsers: []string{"edge"}})
	if c, ok := findCheck(r, "edge", "host binary", Fail); !ok || c.Fix != "ferry install --system --browser edge" {
		t.Errorf("fix for a system registration: %+v\n%s", c, reportText(r))
	}
}

func TestDoctorJSONShape(t *testing.T) {
	env, _ := testEnv(t, "linux")
	r := runDoctor(t, env, DoctorOptions{Browsers: []string{"chrome"}})
	var b strings.Builder
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(b.String()), &raw); err != nil {
		t.Fatal(err)
	}
	if raw["healthy"] != false {
		t.Errorf("healthy = %v", raw["healthy"])
	}
	checks := raw["checks"].([]any)
	first := checks[0].(map[string]any)
	if first["browser"] != "chrome" || first["status"] != "fail" || first["fix"] != "ferry install --browser chrome" {
		t.Errorf("first check = %v", first)
	}
	for _, c := range checks {
		c := c.(map[string]any)
		if c["name"] == "data directory" {
			if _, has := c["browser"]; has {
				t.Errorf("global check carries a browser: %v", c)
			}
		}
	}
}

func TestDoctorReportsBrokenDatabase(t *testing.T) {
	env, _ := testEnv(t, "linux")
	mustInstall(t, env, Options{Browsers: []string{"chromium"}})
	// A directory where the database file should be: it cannot open.
	db := filepath.Join(env.DataDir, "ferry.db")
	os.Remove(db)
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")
	mkdir(t, db)
	r := runDoctor(t, env, DoctorOptions{})
	if c, ok := findCheck(r, "", "database", Fail); !ok || !strings.Contains(c.Fix, "ferry.db") {
		t.Errorf("database check %+v:\n%s", c, reportText(r))
	}
}

// The finding: an existing ferry.db or data directory left open to other users was
// called healthy. Doctor now says what was open and tightens it (as the host does
// at start); it fails on a data directory another user owns, with the command that
// gives it back.
func TestDoctorChecksModesAndOwner(t *testing.T) {
	env, _ := testEnv(t, "linux")
	mustInstall(t, env, Options{Browsers: []string{"chromium"}})
	db := filepath.Join(env.DataDir, "ferry.db")
	os.Chmod(env.DataDir, 0o755)
	os.Chmod(db, 0o644)
	r := runDoctor(t, env, DoctorOptions{})
	c, ok := findCheck(r, "", "file modes", Warn)
	if !ok || !strings.Contains(c.Detail, db+" was 0644 (other users could read it)") || !strings.Contains(c.Detail, "0755") {
		t.Fatalf("loose modes: %+v\n%s", c, reportText(r))
	}
	for p, want := range map[string]os.FileMode{env.DataDir: 0o700, db: 0o600} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != want {
			t.Errorf("%s left at %o", p, fi.Mode().Perm())
		}
	}
	if r = runDoctor(t, env, DoctorOptions{}); !r.Healthy {
		t.Fatalf("not healthy once tightened:\n%s", reportText(r))
	}
	if _, ok := findCheck(r, "", "file modes", OK); !ok {
		t.Errorf("file modes not ok once tightened:\n%s", reportText(r))
	}

	if os.Geteuid() != 0 {
		t.Skip("giving the data directory to another user needs root")
	}
	if err := os.Chown(env.DataDir, 65534, 65534); err != nil {
		t.Skip("chown:", err)
	}
	r = runDoctor(t, env, DoctorOptions{})
	c, ok = findCheck(r, "", "file modes", Fail)
	if r.Healthy || !ok || !strings.Contains(c.Detail, "belongs to another user (uid 65534)") || c.Fix != "sudo chown -R 0 "+env.DataDir {
		t.Fatalf("foreign data directory: %+v\n%s", c, reportText(r))
	}
	if _, ok := findCheck(r, "", "database", Skip); !ok {
		t.Errorf("the database of another user was opened:\n%s", reportText(r))
	}
}
