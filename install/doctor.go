package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/storage"
)

// Status is a check's verdict. Only Fail makes the installation unhealthy.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Check is one line of ferry doctor.
type Check struct {
	Browser string `json:"browser,omitempty"`
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Detail  string `json:"detail"`
	// Fix is the exact command that repairs a problem.
	Fix string `json:"fix,omitempty"`
}

// DoctorReport is the whole of ferry doctor; `--json` prints it as is.
type DoctorReport struct {
	Healthy bool    `json:"healthy"`
	Checks  []Check `json:"checks"`
}

// DoctorOptions are the flags of ferry doctor.
type DoctorOptions struct {
	Browsers    []string // empty: every browser
	UserDataDir string
}

type doctor struct {
	ctx  context.Context
	env  *Env
	opts DoctorOptions
	rep  *DoctorReport
	// allowed is the allowed-IDs setting, nil when the database could not be read.
	allowed []string
	dbOK    bool
}

func (d *doctor) add(c Check) { d.rep.Checks = append(d.rep.Checks, c) }

// Doctor checks the installation end to end.
func Doctor(ctx context.Context, env *Env, opts DoctorOptions) *DoctorReport {
	d := &doctor{ctx: ctx, env: env, opts: opts, rep: &DoctorReport{Checks: []Check{}}}
	global := d.checkStorage()

	browsers, all, err := ParseBrowsers(opts.Browsers)
	if err != nil {
		d.add(Check{Name: "browser", Status: Fail, Detail: err.Error(), Fix: "ferry doctor --browser " + Browsers[0]})
		browsers = nil
	}
	registered := 0
	if opts.UserDataDir != "" {
		label := "profile"
		if !all && len(browsers) == 1 {
			label = browsers[0]
		}
		if loc, err := env.ProfileLocation(label, opts.UserDataDir); err != nil {
			d.add(Check{Browser: label, Name: "manifest", Status: Fail, Detail: err.Error(), Fix: "ferry doctor"})
		} else if d.checkLocation(loc, true) {
			registered++
		}
	} else {
		for _, b := range browsers {
			if d.checkBrowser(b, !all) {
				registered++
			}
		}
	}
	if opts.UserDataDir == "" && all && err == nil {
		if registered == 0 {
			d.add(Check{Name: "registration", Status: Fail, Detail: "no browser has a Ferry manifest, so no browser can start the host", Fix: "ferry install"})
		} else {
			d.add(Check{Name: "registration", Status: OK, Detail: fmt.Sprintf("registered with %d browser(s)", registered)})
		}
	}
	d.rep.Checks = append(d.rep.Checks, global...)
	d.rep.Healthy = true
	for _, c := range d.rep.Checks {
		if c.Status == Fail {
			d.rep.Healthy = false
		}
	}
	return d.rep
}

// checkBrowser looks for browser's registration at user level, then system level.
// A browser named on the command line must be registered; otherwise one that is
// installed but unregistered only warns, so registering with a subset is healthy.
func (d *doctor) checkBrowser(browser string, named bool) bool {
	var candidates []Location
	for _, system := range []bool{false, true} {
		ls, err := d.env.Locations(browser, system)
		if err != nil {
			d.add(Check{Browser: browser, Name: "manifest", Status: Fail, Detail: err.Error()})
			return false
		}
		candidates = append(candidates, ls...)
	}
	for _, l := range candidates {
		if d.present(l) {
			return d.checkLocation(l, named)
		}
	}
	fix := d.installCmd(Location{Browser: browser}, "")
	switch {
	case named:
		d.add(Check{Browser: browser, Name: "manifest", Status: Fail, Detail: "no Ferry manifest at " + candidates[0].String(), Fix: fix})
	case d.env.Detected(browser):
		d.add(Check{Browser: browser, Name: "manifest", Status: Warn, Detail: DisplayName(browser) + " is installed but Ferry is not registered with it", Fix: fix})
	default:
		d.add(Check{Browser: browser, Name: "manifest", Status: Skip, Detail: DisplayName(browser) + " is not installed"})
	}
	return false
}

// present reports whether something is registered at l: the key exists on Windows, a
// file is there elsewhere.
func (d *doctor) present(l Location) bool {
	if l.Key != "" {
		if d.env.Registry == nil {
			return false
		}
		_, ok, err := d.env.Registry.Default(l.Root, l.Key)
		return err == nil && ok
	}
	_, err := os.Lstat(l.File)
	return err == nil
}

// checkLocation checks the registration at l, reporting true when a manifest is there
// (whether healthy or not: it counts as registered).
func (d *doctor) checkLocation(l Location, required bool) bool {
	b := l.Browser
	fix := d.installCmd(l, "")
	file := l.File
	if l.Key != "" {
		cur, ok, err := d.env.Registry.Default(l.Root, l.Key)
		if err != nil || !ok {
			d.add(Check{Browser: b, Name: "manifest", Status: Fail, Detail: fmt.Sprintf("registry key %s cannot be read: %v", l, err), Fix: fix})
			return false
		}
		file = cur
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		st := Fail
		if !required && !d.env.Detected(b) && l.Key == "" {
			st = Skip
		}
		where := file
		if l.Key != "" {
			where = file + " (named by " + l.String() + ")"
		}
		d.add(Check{Browser: b, Name: "manifest", Status: st, Detail: "no Ferry manifest at " + where, Fix: fix})
		return l.Key != ""
	}
	if err != nil {
		d.add(Check{Browser: b, Name: "manifest", Status: Fail, Detail: fmt.Sprintf("cannot read %s: %v", file, err), Fix: "chmod a+r " + d.quote(file)})
		return true
	}
	m, err := ParseManifest(data)
	if err != nil {
		d.add(Check{Browser: b, Name: "manifest", Status: Fail, Detail: fmt.Sprintf("%s is not valid JSON: %v", file, err), Fix: fix})
		return true
	}
	if m.Name != buildinfo.HostName {
		d.add(Check{Browser: b, Name: "manifest", Status: Fail, Detail: fmt.Sprintf("%s names host %q, not %q; the browser ignores it", file, m.Name, buildinfo.HostName), Fix: fix})
		return true
	}
	if m.Type != "stdio" {
		d.add(Check{Browser: b, Name: "manifest", Status: Fail, Detail: fmt.Sprintf("%s has type %q; it must be \"stdio\"", file, m.Type), Fix: fix})
		return true
	}
	d.add(Check{Browser: b, Name: "manifest", Status: OK, Detail: l.String()})
	d.checkBinary(l, m.Path, fix)
	d.checkOrigins(l, m.AllowedOrigins, fix)
	return true
}

func (d *doctor) checkBinary(l Location, path, fix string) {
	b := l.Browser
	fail := func(detail, fix string) {
		d.add(Check{Browser: b, Name: "host binary", Status: Fail, Detail: detail, Fix: fix})
	}
	if path == "" {
		fail("the manifest has no path", fix)
		return
	}
	if !filepath.IsAbs(path) && !(d.env.GOOS == "windows" && isWindowsAbs(path)) {
		fail(fmt.Sprintf("path %q is not absolute; browsers require an absolute path", path), fix)
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		fail(fmt.Sprintf("%s does not exist (moved or deleted?)", path), fix)
		return
	}
	if !fi.Mode().IsRegular() {
		fail(path+" is not a regular file", fix)
		return
	}
	if d.env.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
		fail(path+" is not executable", "chmod +x "+d.quote(path))
		return
	}
	got, err := runVersion(d.ctx, path, d.env.versionTimeout())
	if err != nil {
		fail(fmt.Sprintf("`%s version` failed: %v", path, err), fix)
		return
	}
	if want := buildinfo.VersionLine(); got != want {
		fail(fmt.Sprintf("%s reports %q but this is %q; the browser would start a different ferry", path, got, want), fix)
		return
	}
	d.add(Check{Browser: b, Name: "host binary", Status: OK, Detail: path + ": " + got})
}

func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, `\\`)
}

// runVersion asks the binary at path who it is, without hanging on one that never ends.
func runVersion(ctx context.Context, path string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version")
	var out, errb bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, n: 4096}
	cmd.Stderr = &limitedWriter{w: &errb, n: 4096}
	// A child that leaves a grandchild holding the pipes must not keep us waiting.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("no answer within %s", timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg != "" {
			return "", fmt.Errorf("%v: %s", err, firstLine(msg))
		}
		return "", err
	}
	return strings.TrimSpace(out.String()), nil
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func (d *doctor) checkOrigins(l Location, origins []string, fix string) {
	b := l.Browser
	var bad, ids []string
	for _, o := range origins {
		id, ok := originID(o)
		if !ok {
			bad = append(bad, o)
			continue
		}
		ids = append(ids, id)
	}
	if len(bad) > 0 {
		d.add(Check{Browser: b, Name: "allowed origins", Status: Fail, Detail: fmt.Sprintf("malformed origins %q; the browser rejects the whole manifest", bad), Fix: fix})
		return
	}
	if !slices.Contains(ids, buildinfo.ExtensionID) {
		d.add(Check{Browser: b, Name: "allowed origins", Status: Fail,
			Detail: fmt.Sprintf("allowed_origins %q lacks %s, so the Ferry extension cannot connect", origins, Origin(buildinfo.ExtensionID)), Fix: fix})
		return
	}
	if d.dbOK {
		// The host checks callers against the setting; a mismatch means one side
		// accepts an extension the other refuses.
		for _, id := range normalizeIDs(ids) {
			if !slices.Contains(d.allowed, id) {
				d.add(Check{Browser: b, Name: "allowed origins", Status: Warn,
					Detail: fmt.Sprintf("the manifest allows %s but the host would refuse it (not in %s)", id, AllowedIDsSetting), Fix: d.installCmd(l, id)})
				return
			}
		}
		for _, id := range d.allowed {
			if !slices.Contains(ids, id) {
				d.add(Check{Browser: b, Name: "allowed origins", Status: Warn,
					Detail: fmt.Sprintf("%s allows %s but this manifest does not, so the browser will not let it connect", AllowedIDsSetting, id), Fix: fix})
				return
			}
		}
	}
	d.add(Check{Browser: b, Name: "allowed origins", Status: OK, Detail: strings.Join(origins, " ")})
}

// checkStorage checks the data directory, database and log file. It runs before the
// browsers so that their origin checks can compare against the allowed-IDs setting.
func (d *doctor) checkStorage() []Check {
	dir := d.env.DataDir
	var out []Check
	dataFix, ok := d.checkDataDir(dir)
	if !ok {
		out = append(out, Check{Name: "data directory", Status: Fail, Detail: dataFix[0], Fix: dataFix[1]})
		skip := "not checked: the data directory is unusable"
		out = append(out, Check{Name: "database", Status: Skip, Detail: skip}, Check{Name: "log file", Status: Skip, Detail: skip})
		return out
	}
	out = append(out, Check{Name: "data directory", Status: OK, Detail: dir + " is writable"})

	modes, ok := d.checkModes(dir)
	out = append(out, modes)
	if !ok {
		skip := "not checked: the data directory is not this user's own"
		return append(out, Check{Name: "database", Status: Skip, Detail: skip}, Check{Name: "log file", Status: Skip, Detail: skip})
	}

	st, err := d.env.openStore(dir)
	if err != nil {
		fix := "chmod u+rw " + d.quote(filepath.Join(dir, storage.DatabaseFile))
		if errors.Is(err, storage.ErrSchemaTooNew) {
			fix = "install the newest ferry (a newer version migrated this database)"
		}
		out = append(out, Check{Name: "database", Status: Fail, Detail: err.Error(), Fix: fix})
	} else {
		val, _, gerr := st.GetSetting(d.ctx, AllowedIDsSetting)
		cerr := st.Close()
		switch ids, perr := decodeIDs(val); {
		case gerr != nil:
			out = append(out, Check{Name: "database", Status: Fail, Detail: "reading settings: " + gerr.Error(), Fix: "ferry doctor"})
		case perr != nil:
			out = append(out, Check{Name: "database", Status: Warn, Detail: perr.Error(), Fix: "ferry config set " + AllowedIDsSetting + " '[]'"})
		case cerr != nil:
			out = append(out, Check{Name: "database", Status: Fail, Detail: "closing: " + cerr.Error()})
		default:
			d.allowed, d.dbOK = normalizeIDs(ids), true
			out = append(out, Check{Name: "database", Status: OK, Detail: filepath.Join(dir, storage.DatabaseFile) + " opens and is migrated"})
		}
	}

	logPath := storage.LogPath(dir)
	if err := checkAppendable(logPath); err != nil {
		out = append(out, Check{Name: "log file", Status: Fail, Detail: err.Error(), Fix: "chmod u+w " + d.quote(filepath.Dir(logPath))})
	} else {
		out = append(out, Check{Name: "log file", Status: OK, Detail: logPath + " is writable"})
	}
	return out
}

// checkModes checks that the data directory, its database and its logs are the
// user's own and closed to others. What another user owns fails (ferry refuses to
// start on it); what others could read or change is tightened now, as the host
// would at its next start, and said, since others may already have read it.
func (d *doctor) checkModes(dir string) (Check, bool) {
	c := Check{Name: "file modes"}
	loose, err := storage.CheckDataDir(dir, true)
	var oe *storage.OwnerError
	switch {
	case errors.As(err, &oe):
		c.Status, c.Detail = Fail, oe.Error()
		c.Fix = "sudo chown -R " + strconv.Itoa(oe.Uid) + " " + d.quote(dir)
		return c, false
	case err != nil:
		c.Status, c.Detail = Fail, err.Error()
		c.Fix = "chmod 700 " + d.quote(dir) + " && chmod 600 " + d.quote(filepath.Join(dir, storage.DatabaseFile))
		return c, true
	case len(loose) > 0:
		parts := make([]string, len(loose))
		for i, l := range loose {
			parts[i] = l.String()
		}
		c.Status = Warn
		c.Detail = strings.Join(parts, "; ") + "; tightened now. If other users could read the database, replace the keys it held (`ferry secret list`, `ferry provider list`)"
		return c, true
	}
	c.Status = OK
	if d.env.GOOS == "windows" {
		c.Detail = dir + " is in the user's profile"
	} else {
		c.Detail = dir + " and its database are this user's alone (0700, 0600)"
	}
	return c, true
}

// checkDataDir returns ok, or the detail and fix of the problem.
func (d *doctor) checkDataDir(dir string) ([2]string, bool) {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return [2]string{dir + " is a file, not a directory", "mv " + d.quote(dir) + " " + d.quote(dir+".bak")}, false
	case errors.Is(err, os.ErrNotExist):
		// The host creates it on first start; creating it now proves it can be.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return [2]string{fmt.Sprintf("%s does not exist and cannot be created: %v", dir, err), d.mkdirFix(dir)}, false
		}
	case err != nil:
		return [2]string{fmt.Sprintf("cannot reach %s: %v", dir, err), d.mkdirFix(dir)}, false
	}
	f, err := os.CreateTemp(dir, ".ferry-doctor-*")
	if err != nil {
		return [2]string{fmt.Sprintf("%s is not writable: %v", dir, unwrapPath(err)), "chmod u+w " + d.quote(dir)}, false
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return [2]string{fmt.Sprintf("cannot remove files in %s: %v", dir, unwrapPath(err)), "chmod u+w " + d.quote(dir)}, false
	}
	return [2]string{}, true
}

func (d *doctor) mkdirFix(dir string) string {
	if d.env.GOOS == "windows" {
		return "mkdir " + d.quote(dir)
	}
	return "mkdir -p " + d.quote(dir) + " && chmod 700 " + d.quote(dir)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkAppendable opens the log the way the host does, creating it if needed.
func checkAppendable(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %v", filepath.Dir(path), unwrapPath(err))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("%s is not writable: %v", path, unwrapPath(err))
	}
	return f.Close()
}

// installCmd is the command that (re)registers the host at l, with extension id added
// when not empty.
func (d *doctor) installCmd(l Location, id string) string {
	var parts []string
	if l.System && d.env.GOOS != "windows" {
		parts = append(parts, "sudo")
	}
	parts = append(parts, "ferry", "install")
	if l.System {
		parts = append(parts, "--system")
	}
	if l.Browser != "" && l.Browser != "profile" {
		parts = append(parts, "--browser", l.Browser)
	}
	if l.Profile {
		parts = append(parts, "--user-data-dir", d.quote(filepath.Dir(filepath.Dir(l.File))))
	}
	if id != "" {
		parts = append(parts, "--extension-id", id)
	}
	return strings.Join(parts, " ")
}

// quote makes s safe to paste into the user's shell.
func (d *doctor) quote(s string) string {
	if d.env.GOOS == "windows" {
		if strings.ContainsAny(s, " \t&()^") {
			return `"` + s + `"`
		}
		return s
	}
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteText prints the report for people: one line per check, its fix beneath.
func (r *DoctorReport) WriteText(w io.Writer) error {
	var buf bytes.Buffer
	problems := 0
	for _, c := range r.Checks {
		mark := map[Status]string{OK: "✓", Warn: "!", Fail: "✗", Skip: "-"}[c.Status]
		name := c.Name
		if c.Browser != "" {
			name = c.Browser + " " + c.Name
		}
		fmt.Fprintf(&buf, "%s %s: %s\n", mark, name, c.Detail)
		if c.Fix != "" && (c.Status == Fail || c.Status == Warn) {
			fmt.Fprintf(&buf, "    fix: %s\n", c.Fix)
		}
		if c.Status == Fail {
			problems++
		}
	}
	if r.Healthy {
		buf.WriteString("healthy\n")
	} else {
		fmt.Fprintf(&buf, "not healthy: %d problem(s)\n", problems)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteJSON prints the report as one JSON object.
func (r *DoctorReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
