package install

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ferryhq/ferry/buildinfo"
)

// Browsers are the names --browser accepts (besides "all"), in the order output lists them.
var Browsers = []string{"chrome", "chromium", "edge", "brave", "vivaldi"}

type browserInfo struct {
	display string
	// Linux: profile root under $XDG_CONFIG_HOME, system manifest directory, executables.
	linuxConfig string
	linuxSystem string
	linuxExes   []string
	// macOS: profile root under ~/Library/Application Support, system manifest
	// directory, and the application bundle.
	macSupport string
	macSystem  string
	macApp     string
	// Windows: key under Software\ holding NativeMessagingHosts, and the profile root
	// under %LOCALAPPDATA% (slash-separated, like the other folders here, so the table
	// reads the same on every OS the tests run on).
	winKey      string
	winUserData string
}

var browserTable = map[string]browserInfo{
	"chrome": {
		display:     "Google Chrome",
		linuxConfig: "google-chrome",
		linuxSystem: "/etc/opt/chrome/native-messaging-hosts",
		linuxExes:   []string{"google-chrome", "google-chrome-stable"},
		macSupport:  "Google/Chrome",
		macSystem:   "/Library/Google/Chrome/NativeMessagingHosts",
		macApp:      "Google Chrome.app",
		winKey:      `Google\Chrome`,
		winUserData: "Google/Chrome/User Data",
	},
	"chromium": {
		display:     "Chromium",
		linuxConfig: "chromium",
		linuxSystem: "/etc/chromium/native-messaging-hosts",
		linuxExes:   []string{"chromium", "chromium-browser"},
		macSupport:  "Chromium",
		macSystem:   "/Library/Application Support/Chromium/NativeMessagingHosts",
		macApp:      "Chromium.app",
		winKey:      `Chromium`,
		winUserData: "Chromium/User Data",
	},
	"edge": {
		display:     "Microsoft Edge",
		linuxConfig: "microsoft-edge",
		linuxSystem: "/etc/opt/edge/native-messaging-hosts",
		linuxExes:   []string{"microsoft-edge", "microsoft-edge-stable"},
		macSupport:  "Microsoft Edge",
		macSystem:   "/Library/Microsoft/Edge/NativeMessagingHosts",
		macApp:      "Microsoft Edge.app",
		winKey:      `Microsoft\Edge`,
		winUserData: "Microsoft/Edge/User Data",
	},
	"brave": {
		display:     "Brave",
		linuxConfig: "BraveSoftware/Brave-Browser",
		linuxSystem: "/etc/opt/brave/native-messaging-hosts",
		linuxExes:   []string{"brave-browser", "brave", "brave-browser-stable"},
		macSupport:  "BraveSoftware/Brave-Browser",
		macSystem:   "/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts",
		macApp:      "Brave Browser.app",
		winKey:      `BraveSoftware\Brave-Browser`,
		winUserData: "BraveSoftware/Brave-Browser/User Data",
	},
	"vivaldi": {
		display:     "Vivaldi",
		linuxConfig: "vivaldi",
		linuxSystem: "/etc/opt/vivaldi/native-messaging-hosts",
		linuxExes:   []string{"vivaldi", "vivaldi-stable"},
		macSupport:  "Vivaldi",
		macSystem:   "/Library/Application Support/Vivaldi/NativeMessagingHosts",
		macApp:      "Vivaldi.app",
		winKey:      `Vivaldi`,
		winUserData: "Vivaldi/User Data",
	},
}

// Location is one place a browser looks for the ferry_host registration.
type Location struct {
	Browser string
	// File is the manifest's path. On Windows all browsers of one scope share it.
	File string
	// Key is, on Windows, the registry key whose default value names File.
	Key  string
	Root RegRoot
	// System is true for machine-wide locations (root or administrator needed).
	System bool
	// SharedWith names another browser that reads the same place (Brave on macOS also
	// reads Chrome's folder), so uninstalling one must not break the other.
	SharedWith string
	// Profile is true for a --user-data-dir location.
	Profile bool
}

// String is how output names the location: the registry key on Windows, else the file.
func (l Location) String() string {
	if l.Key != "" {
		return l.Root.String() + `\` + l.Key
	}
	return l.File
}

// ParseBrowsers validates --browser values; "all" or none means every browser.
func ParseBrowsers(names []string) (list []string, all bool, err error) {
	if len(names) == 0 {
		return slices.Clone(Browsers), true, nil
	}
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "all" {
			return slices.Clone(Browsers), true, nil
		}
		if _, ok := browserTable[n]; !ok {
			return nil, false, fmt.Errorf("unknown browser %q: use one of %s, all", n, strings.Join(Browsers, ", "))
		}
		seen[n] = true
	}
	for _, b := range Browsers {
		if seen[b] {
			list = append(list, b)
		}
	}
	return list, false, nil
}

func (e *Env) configHome() string {
	if x := e.getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return x
	}
	return filepath.Join(e.Home, ".config")
}

func (e *Env) macSupport() string {
	return filepath.Join(e.Home, "Library", "Application Support")
}

func (e *Env) localAppData() string {
	if x := e.getenv("LOCALAPPDATA"); x != "" {
		return x
	}
	return filepath.Join(e.Home, "AppData", "Local")
}

// WindowsManifest is where the Windows manifest file lives: in the data directory per
// user; beside the binary for --system, since other users cannot read this user's
// %LOCALAPPDATA%.
func (e *Env) WindowsManifest(system bool) string {
	if system {
		return filepath.Join(filepath.Dir(e.Exe), ManifestFile)
	}
	return filepath.Join(e.DataDir, ManifestFile)
}

// Locations lists where browser looks for the registration, at user or system level.
func (e *Env) Locations(browser string, system bool) ([]Location, error) {
	b, ok := browserTable[browser]
	if !ok {
		return nil, fmt.Errorf("unknown browser %q", browser)
	}
	switch e.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd":
		if system {
			return []Location{{Browser: browser, File: filepath.Join(b.linuxSystem, ManifestFile), System: true}}, nil
		}
		return []Location{{Browser: browser, File: filepath.Join(e.configHome(), filepath.FromSlash(b.linuxConfig), "NativeMessagingHosts", ManifestFile)}}, nil
	case "darwin":
		var locs []Location
		if system {
			locs = append(locs, Location{Browser: browser, File: filepath.Join(b.macSystem, ManifestFile), System: true})
		} else {
			locs = append(locs, Location{Browser: browser, File: filepath.Join(e.macSupport(), filepath.FromSlash(b.macSupport), "NativeMessagingHosts", ManifestFile)})
		}
		if browser == "brave" {
			// Brave builds on macOS have also looked in Chrome's folder; registering there
			// too keeps Ferry reachable whichever folder this Brave reads.
			c := browserTable["chrome"]
			dir := filepath.Join(e.macSupport(), filepath.FromSlash(c.macSupport), "NativeMessagingHosts")
			if system {
				dir = c.macSystem
			}
			locs = append(locs, Location{Browser: browser, File: filepath.Join(dir, ManifestFile), System: system, SharedWith: "chrome"})
		}
		return locs, nil
	case "windows":
		root := CurrentUser
		if system {
			root = LocalMachine
		}
		return []Location{{
			Browser: browser,
			File:    e.WindowsManifest(system),
			Key:     `Software\` + b.winKey + `\NativeMessagingHosts\` + buildinfo.HostName,
			Root:    root,
			System:  system,
		}}, nil
	}
	return nil, fmt.Errorf("native messaging is not supported on %s", e.GOOS)
}

// ProfileLocation is the manifest inside a browser profile started with
// --user-data-dir=DIR, which Chromium reads on Linux and macOS before anything else.
func (e *Env) ProfileLocation(browser, userDataDir string) (Location, error) {
	if e.GOOS == "windows" {
		return Location{}, fmt.Errorf("--user-data-dir is not supported on Windows: Chrome finds native hosts there only through the registry; run ferry install without it")
	}
	dir, err := filepath.Abs(userDataDir)
	if err != nil {
		return Location{}, fmt.Errorf("--user-data-dir %q: %w", userDataDir, err)
	}
	return Location{Browser: browser, File: filepath.Join(dir, "NativeMessagingHosts", ManifestFile), Profile: true}, nil
}

// Detected reports whether browser seems installed for this user: its profile root
// exists, or its executable or application bundle is there.
func (e *Env) Detected(browser string) bool {
	b, ok := browserTable[browser]
	if !ok {
		return false
	}
	var dirs []string
	var exes []string
	switch e.GOOS {
	case "darwin":
		dirs = []string{
			filepath.Join(e.macSupport(), filepath.FromSlash(b.macSupport)),
			filepath.Join("/Applications", b.macApp),
			filepath.Join(e.Home, "Applications", b.macApp),
		}
	case "windows":
		dirs = []string{filepath.Join(e.localAppData(), filepath.FromSlash(b.winUserData))}
	default:
		dirs = []string{filepath.Join(e.configHome(), filepath.FromSlash(b.linuxConfig))}
		exes = b.linuxExes
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return true
		}
	}
	if e.LookPath != nil {
		for _, x := range exes {
			if _, err := e.LookPath(x); err == nil {
				return true
			}
		}
	}
	return false
}

// DisplayName is the browser's product name.
func DisplayName(browser string) string {
	if b, ok := browserTable[browser]; ok {
		return b.display
	}
	return browser
}
