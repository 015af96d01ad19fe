package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func locationsOf(t *testing.T, env *Env, system bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, b := range Browsers {
		ls, err := env.Locations(b, system)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			out[b] = append(out[b], l.String())
		}
	}
	return out
}

func checkTable(t *testing.T, got, want map[string][]string) {
	t.Helper()
	for b, w := range want {
		if strings.Join(got[b], "|") != strings.Join(w, "|") {
			t.Errorf("%s:\n got %q\nwant %q", b, got[b], w)
		}
	}
}

func TestLinuxLocations(t *testing.T) {
	env := &Env{GOOS: "linux", Home: "/home/u", Getenv: func(string) string { return "" }}
	const m = "/NativeMessagingHosts/ferry_host.json"
	checkTable(t, locationsOf(t, env, false), map[string][]string{
		"chrome":   {"/home/u/.config/google-chrome" + m},
		"chromium": {"/home/u/.config/chromium" + m},
		"edge":     {"/home/u/.config/microsoft-edge" + m},
		"brave":    {"/home/u/.config/BraveSoftware/Brave-Browser" + m},
		"vivaldi":  {"/home/u/.config/vivaldi" + m},
	})
	env.Getenv = func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return "/xdg"
		}
		return ""
	}
	checkTable(t, locationsOf(t, env, false), map[string][]string{
		"chrome": {"/xdg/google-chrome" + m},
		"brave":  {"/xdg/BraveSoftware/Brave-Browser" + m},
	})
	checkTable(t, locationsOf(t, env, true), map[string][]string{
		"chrome":   {"/etc/opt/chrome/native-messaging-hosts/ferry_host.json"},
		"chromium": {"/etc/chromium/native-messaging-hosts/ferry_host.json"},
		"edge":     {"/etc/opt/edge/native-messaging-hosts/ferry_host.json"},
		"brave":    {"/etc/opt/brave/native-messaging-hosts/ferry_host.json"},
		"vivaldi":  {"/etc/opt/vivaldi/native-messaging-hosts/ferry_host.json"},
	})
}

func TestDarwinLocations(t *testing.T) {
	env := &Env{GOOS: "darwin", Home: "/Users/u"}
	const as = "/Users/u/Library/Application Support/"
	const m = "/NativeMessagingHosts/ferry_host.json"
	checkTable(t, locationsOf(t, env, false), map[string][]string{
		"chrome":   {as + "Google/Chrome" + m},
		"chromium": {as + "Chromium" + m},
		"edge":     {as + "Microsoft Edge" + m},
		"brave":    {as + "BraveSoftware/Brave-Browser" + m, as + "Google/Chrome" + m},
		"vivaldi":  {as + "Vivaldi" + m},
	})
	checkTable(t, locationsOf(t, env, true), map[string][]string{
		"chrome":   {"/Library/Google/Chrome" + m},
		"chromium": {"/Library/Application Support/Chromium" + m},
		"edge":     {"/Library/Microsoft/Edge" + m},
		"brave":    {"/Library/Application Support/BraveSoftware/Brave-Browser" + m, "/Library/Google/Chrome" + m},
		"vivaldi":  {"/Library/Application Support/Vivaldi" + m},
	})
}

func TestWindowsLocations(t *testing.T) {
	env := &Env{GOOS: "windows", Home: "/home/u", DataDir: "/data/Ferry", Exe: "/prog/Ferry/ferry.exe"}
	const k = `\NativeMessagingHosts\ferry_host`
	checkTable(t, locationsOf(t, env, false), map[string][]string{
		"chrome":   {`HKCU\Software\Google\Chrome` + k},
		"chromium": {`HKCU\Software\Chromium` + k},
		"edge":     {`HKCU\Software\Microsoft\Edge` + k},
		"brave":    {`HKCU\Software\BraveSoftware\Brave-Browser` + k},
		"vivaldi":  {`HKCU\Software\Vivaldi` + k},
	})
	checkTable(t, locationsOf(t, env, true), map[string][]string{
		"chrome": {`HKLM\Software\Google\Chrome` + k},
		"edge":   {`HKLM\Software\Microsoft\Edge` + k},
	})
	if got := env.WindowsManifest(false); got != filepath.Join("/data/Ferry", "ferry_host.json") {
		t.Errorf("user manifest at %s", got)
	}
	if got := env.WindowsManifest(true); got != filepath.Join("/prog/Ferry", "ferry_host.json") {
		t.Errorf("system manifest at %s", got)
	}
	if _, err := env.ProfileLocation("chrome", "/p"); err == nil {
		t.Error("--user-data-dir accepted on Windows")
	}
}

func TestDetectionPerOS(t *testing.T) {
	home := t.TempDir()
	mac := &Env{GOOS: "darwin", Home: home}
	mkdir(t, filepath.Join(home, "Library", "Application Support", "Microsoft Edge"))
	mkdir(t, filepath.Join(home, "Applications", "Vivaldi.app"))
	win := &Env{GOOS: "windows", Home: home, Getenv: func(k string) string {
		if k == "LOCALAPPDATA" {
			return filepath.Join(home, "lad")
		}
		return ""
	}}
	mkdir(t, filepath.Join(home, "lad", "BraveSoftware", "Brave-Browser", "User Data"))
	for _, tc := range []struct {
		env  *Env
		want string
	}{{mac, "edge vivaldi"}, {win, "brave"}} {
		var got []string
		for _, b := range Browsers {
			if tc.env.Detected(b) {
				got = append(got, b)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: detected %v, want %s", tc.env.GOOS, got, tc.want)
		}
	}
}

func TestWindowsRegistryInstallUninstall(t *testing.T) {
	env, _ := testEnv(t, "windows")
	reg := env.Registry.(*fakeRegistry)
	file := filepath.Join(env.DataDir, "ferry_host.json")
	const chromeKey = `HKCU\Software\Google\Chrome\NativeMessagingHosts\ferry_host`
	const edgeKey = `HKCU\Software\Microsoft\Edge\NativeMessagingHosts\ferry_host`
	const braveKey = `HKCU\Software\BraveSoftware\Brave-Browser\NativeMessagingHosts\ferry_host`

	opts := Options{Browsers: []string{"chrome", "edge"}}
	rep := mustInstall(t, env, opts)
	got := actions(rep)
	if got[file] != Written || got[chromeKey] != Written || got[edgeKey] != Written || len(rep.Results) != 3 {
		t.Fatalf("install: %v", rep.Results)
	}
	if reg.keys[chromeKey] != file || reg.keys[edgeKey] != file || len(reg.keys) != 2 {
		t.Fatalf("registry = %v", reg.keys)
	}
	if r := runDoctor(t, env, DoctorOptions{}); !r.Healthy {
		t.Fatalf("doctor on Windows:\n%s", reportText(r))
	}
	for _, r := range mustInstall(t, env, opts).Results {
		if r.Action != Unchanged {
			t.Errorf("second install: %v", r)
		}
	}

	// Another program's host under Brave's key, same name: never ours to delete.
	reg.keys[braveKey] = `C:\Other\host.json`

	// Uninstalling Chrome alone keeps the file Edge still needs.
	rep = mustUninstall(t, env, Options{Browsers: []string{"chrome"}})
	got = actions(rep)
	if got[chromeKey] != Removed || got[file] != LeftAlone {
		t.Errorf("uninstall chrome: %v", rep.Results)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("manifest removed while Edge still uses it: %v", err)
	}

	rep = mustUninstall(t, env, Options{})
	got = actions(rep)
	if got[edgeKey] != Removed || got[braveKey] != LeftAlone || got[chromeKey] != NotPresent || got[file] != Removed {
		t.Errorf("uninstall all: %v", rep.Results)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("manifest still there: %v", err)
	}
	if reg.keys[braveKey] != `C:\Other\host.json` || len(reg.keys) != 1 {
		t.Errorf("registry after uninstall = %v", reg.keys)
	}

	// --system goes to HKLM, the manifest beside the binary.
	mustInstall(t, env, Options{Browsers: []string{"vivaldi"}, System: true})
	sysFile := filepath.Join(filepath.Dir(env.Exe), "ferry_host.json")
	if v := reg.keys[`HKLM\Software\Vivaldi\NativeMessagingHosts\ferry_host`]; v != sysFile {
		t.Errorf("HKLM key = %q, want %q (registry %v)", v, sysFile, reg.keys)
	}
}

func TestDarwinBraveLeavesChromeFolderToChrome(t *testing.T) {
	env, _ := testEnv(t, "darwin")
	as := filepath.Join(env.Home, "Library", "Application Support")
	chromeFile := filepath.Join(as, "Google", "Chrome", "NativeMessagingHosts", "ferry_host.json")
	braveFile := filepath.Join(as, "BraveSoftware", "Brave-Browser", "NativeMessagingHosts", "ferry_host.json")

	rep := mustInstall(t, env, Options{Browsers: []string{"chrome", "brave"}})
	if len(rep.Results) != 2 || rep.Results[0].Browser != "chrome" || rep.Results[1].Location != braveFile {
		t.Fatalf("the shared Chrome folder should be written once, as chrome's: %v", rep.Results)
	}
	// Chrome is installed (its folder exists): removing Brave must keep Chrome working.
	rep = mustUninstall(t, env, Options{Browsers: []string{"brave"}})
	if got := actions(rep); got[braveFile] != Removed || got[chromeFile] != LeftAlone {
		t.Errorf("uninstall brave: %v", rep.Results)
	}
	if _, err := os.Stat(chromeFile); err != nil {
		t.Errorf("Chrome's manifest went with Brave's: %v", err)
	}
}
