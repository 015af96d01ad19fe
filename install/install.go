package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Options are the flags of ferry install and ferry uninstall.
type Options struct {
	// Browsers chosen with --browser; empty means every browser found (install) or
	// every browser (uninstall).
	Browsers []string
	// UserDataDir registers in one browser profile instead (what tests and portable
	// profiles use).
	UserDataDir string
	// System registers for every user of the machine.
	System bool
	// ExtensionIDs are allowed to connect besides the pinned extension.
	ExtensionIDs []string
}

// Action is what happened at one location.
type Action string

const (
	Written    Action = "written"
	Unchanged  Action = "unchanged"
	Removed    Action = "removed"
	NotPresent Action = "not present"
	LeftAlone  Action = "left alone"
)

// Result is one line of install or uninstall output.
type Result struct {
	Browser  string // a browser name, or "manifest" for the shared Windows file
	Location string // a file, or a registry key on Windows
	Action   Action
	Detail   string // why, for LeftAlone; empty otherwise
}

func (r Result) String() string {
	s := fmt.Sprintf("%-9s %-11s %s", r.Browser, r.Action, r.Location)
	if r.Detail != "" {
		s += " (" + r.Detail + ")"
	}
	return s
}

// Report is what Install or Uninstall did: notes first, then one result per location.
type Report struct {
	Notes   []string
	Results []Result
}

func (o *Options) validate(env *Env) (ids []string, err error) {
	if o.System && o.UserDataDir != "" {
		return nil, errors.New("--system and --user-data-dir cannot be combined: a profile directory belongs to one user")
	}
	for _, raw := range o.ExtensionIDs {
		id, err := ParseExtensionID(raw)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	switch env.GOOS {
	case "windows":
		if env.Registry == nil {
			return nil, errors.New("no Windows registry available")
		}
		if o.UserDataDir != "" {
			return nil, errors.New("--user-data-dir is not supported on Windows: Chrome finds native hosts there only through the registry; run the command without it")
		}
	}
	return ids, nil
}

// targets resolves the flags to locations, deduplicated by file (and key) so that a
// folder two browsers read is written once.
func (o *Options) targets(env *Env, forInstall bool) (locs []Location, notes []string, err error) {
	browsers, all, err := ParseBrowsers(o.Browsers)
	if err != nil {
		return nil, nil, err
	}
	if o.UserDataDir != "" {
		label := "profile"
		if !all && len(browsers) == 1 {
			label = browsers[0]
		}
		loc, err := env.ProfileLocation(label, o.UserDataDir)
		if err != nil {
			return nil, nil, err
		}
		return []Location{loc}, nil, nil
	}
	if all && len(o.Browsers) == 0 && forInstall {
		var found []string
		for _, b := range browsers {
			if env.Detected(b) {
				found = append(found, b)
			}
		}
		if len(found) == 0 {
			// Registering everywhere costs a few small files and means a browser installed
			// later, or one kept somewhere we did not look, finds Ferry at once.
			notes = append(notes, "no supported browser found; registering for all of them ("+strings.Join(browsers, ", ")+")")
		} else {
			browsers = found
		}
	}
	seen := map[string]bool{}
	var shared []Location
	for _, b := range browsers {
		ls, err := env.Locations(b, o.System)
		if err != nil {
			return nil, nil, err
		}
		for _, l := range ls {
			if l.SharedWith != "" {
				shared = append(shared, l)
				continue
			}
			seen[l.String()] = true
			locs = append(locs, l)
		}
	}
	// Shared locations go last so a browser that owns the folder gets the line.
	for _, l := range shared {
		if !seen[l.String()] {
			seen[l.String()] = true
			locs = append(locs, l)
		}
	}
	return locs, notes, nil
}

// Install registers env.Exe as the ferry_host native-messaging host.
func Install(ctx context.Context, env *Env, opts Options) (*Report, error) {
	ids, err := opts.validate(env)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(env.Exe) {
		return nil, fmt.Errorf("the host path %q is not absolute; browsers require an absolute path", env.Exe)
	}
	if fi, err := os.Stat(env.Exe); err != nil {
		return nil, fmt.Errorf("the host binary %s cannot be registered: %w", env.Exe, err)
	} else if fi.IsDir() {
		return nil, fmt.Errorf("the host path %s is a directory, not the ferry binary", env.Exe)
	}
	locs, notes, err := opts.targets(env, true)
	if err != nil {
		return nil, err
	}
	rep := &Report{Notes: notes}

	allowed, added, err := mergeAllowedIDs(ctx, env, ids)
	if err != nil {
		return nil, err
	}
	for _, id := range added {
		rep.Notes = append(rep.Notes, "extension "+id+" added to "+AllowedIDsSetting)
	}
	data := NewManifest(env.Exe, allowed).Encode()

	if env.GOOS == "windows" {
		return rep, installWindows(env, opts, locs, data, rep)
	}
	for _, l := range locs {
		changed, err := writeFileAtomic(l.File, data, 0o644)
		if err != nil {
			return rep, fmt.Errorf("%s: %w%s", l.Browser, err, permissionHint(err, opts))
		}
		rep.Results = append(rep.Results, Result{Browser: l.Browser, Location: l.File, Action: actionFor(changed)})
	}
	return rep, nil
}

func installWindows(env *Env, opts Options, locs []Location, data []byte, rep *Report) error {
	file := env.WindowsManifest(opts.System)
	changed, err := writeFileAtomic(file, data, 0o644)
	if err != nil {
		return fmt.Errorf("manifest: %w%s", err, permissionHint(err, opts))
	}
	rep.Results = append(rep.Results, Result{Browser: "manifest", Location: file, Action: actionFor(changed)})
	for _, l := range locs {
		cur, ok, err := env.Registry.Default(l.Root, l.Key)
		if err != nil {
			return fmt.Errorf("%s: reading %s: %w", l.Browser, l, err)
		}
		if ok && cur == file {
			rep.Results = append(rep.Results, Result{Browser: l.Browser, Location: l.String(), Action: Unchanged})
			continue
		}
		if err := env.Registry.SetDefault(l.Root, l.Key, file); err != nil {
			return fmt.Errorf("%s: writing %s: %w%s", l.Browser, l, err, permissionHint(err, opts))
		}
		rep.Results = append(rep.Results, Result{Browser: l.Browser, Location: l.String(), Action: Written})
	}
	return nil
}

func actionFor(changed bool) Action {
	if changed {
		return Written
	}
	return Unchanged
}

func permissionHint(err error, opts Options) string {
	if !errors.Is(err, os.ErrPermission) {
		return ""
	}
	if opts.System {
		return " (a --system install needs root: run it with sudo, or as administrator on Windows)"
	}
	return " (check the ownership and permissions of that directory)"
}

// mergeAllowedIDs adds ids to the allowed-IDs setting and returns the whole list, which
// the manifests must mirror.
func mergeAllowedIDs(ctx context.Context, env *Env, ids []string) (all, added []string, err error) {
	st, err := env.openStore(env.DataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("opening Ferry's database in %s: %w", env.DataDir, err)
	}
	defer st.Close()
	cur, _, err := st.GetSetting(ctx, AllowedIDsSetting)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", AllowedIDsSetting, err)
	}
	existing, err := decodeIDs(cur)
	if err != nil {
		return nil, nil, fmt.Errorf("%w; fix it with: ferry config set %s '[]'", err, AllowedIDsSetting)
	}
	existing = normalizeIDs(existing)
	for _, id := range normalizeIDs(ids) {
		if !slices.Contains(existing, id) {
			added = append(added, id)
		}
	}
	all = normalizeIDs(append(existing, added...))
	if len(added) > 0 {
		if err := st.SetSetting(ctx, AllowedIDsSetting, encodeIDs(all)); err != nil {
			return nil, nil, fmt.Errorf("saving %s: %w", AllowedIDsSetting, err)
		}
	}
	return all, added, nil
}

// Uninstall removes what Install wrote, and nothing else: only files that are Ferry
// manifests, only registry keys that point at Ferry's manifest.
func Uninstall(ctx context.Context, env *Env, opts Options) (*Report, error) {
	ids, err := opts.validate(env)
	if err != nil {
		return nil, err
	}
	locs, _, err := opts.targets(env, false)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	if env.GOOS == "windows" {
		err = uninstallWindows(env, opts, locs, rep)
	} else {
		err = uninstallFiles(env, opts, locs, rep)
	}
	if err != nil {
		return rep, err
	}
	if len(ids) > 0 {
		removed, err := removeAllowedIDs(ctx, env, ids)
		if err != nil {
			return rep, err
		}
		for _, id := range ids {
			if slices.Contains(removed, id) {
				rep.Notes = append(rep.Notes, "extension "+id+" removed from "+AllowedIDsSetting+"; run ferry install to drop it from manifests left in place")
			} else {
				rep.Notes = append(rep.Notes, "extension "+id+" was not in "+AllowedIDsSetting)
			}
		}
	}
	return rep, nil
}

func uninstallFiles(env *Env, opts Options, locs []Location, rep *Report) error {
	selected := map[string]bool{}
	for _, l := range locs {
		selected[l.Browser] = true
	}
	for _, l := range locs {
		if l.SharedWith != "" && !selected[l.SharedWith] && env.Detected(l.SharedWith) {
			rep.Results = append(rep.Results, Result{Browser: l.Browser, Location: l.File, Action: LeftAlone,
				Detail: DisplayName(l.SharedWith) + " reads it too; uninstall --browser " + l.SharedWith + " to remove it"})
			continue
		}
		r, err := removeManifest(l.Browser, l.File, opts)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	return nil
}

func removeManifest(label, file string, opts Options) (Result, error) {
	_, exists, ours, err := readOurManifest(file)
	if err != nil {
		return Result{}, fmt.Errorf("%s: reading %s: %w%s", label, file, err, permissionHint(err, opts))
	}
	switch {
	case !exists:
		return Result{Browser: label, Location: file, Action: NotPresent}, nil
	case !ours:
		return Result{Browser: label, Location: file, Action: LeftAlone, Detail: "not a Ferry manifest"}, nil
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Result{}, fmt.Errorf("%s: removing %s: %w%s", label, file, err, permissionHint(err, opts))
	}
	return Result{Browser: label, Location: file, Action: Removed}, nil
}

func uninstallWindows(env *Env, opts Options, locs []Location, rep *Report) error {
	file := env.WindowsManifest(opts.System)
	for _, l := range locs {
		cur, ok, err := env.Registry.Default(l.Root, l.Key)
		if err != nil {
			return fmt.Errorf("%s: reading %s: %w", l.Browser, l, err)
		}
		switch {
		case !ok:
			rep.Results = append(rep.Results, Result{Browser: l.Browser, Location: l.String(), Action: NotPresent})
		case !samePath(cur, file):
			rep.Results = append(rep.Results, Result{Browser: l.Browser, Location: l.String(), Action: LeftAlone, Detail: "points at " + cur + ", not Ferry's manifest"})
		default:
			if err := env.Registry.DeleteKey(l.Root, l.Key); err != nil {
				return fmt.Errorf("%s: removing %s: %w%s", l.Browser, l, err, permissionHint(err, opts))
			}
			rep.Results = append(rep.Results, Result{Browser: l.Browser, Location: l.String(), Action: Removed})
		}
	}
	// The one manifest file serves every browser; keep it while any still uses it.
	var users []string
	for _, b := range Browsers {
		ls, err := env.Locations(b, opts.System)
		if err != nil {
			return err
		}
		cur, ok, err := env.Registry.Default(ls[0].Root, ls[0].Key)
		if err == nil && ok && samePath(cur, file) {
			users = append(users, b)
		}
	}
	if len(users) > 0 {
		rep.Results = append(rep.Results, Result{Browser: "manifest", Location: file, Action: LeftAlone, Detail: "still registered for " + strings.Join(users, ", ")})
		return nil
	}
	r, err := removeManifest("manifest", file, opts)
	if err != nil {
		return err
	}
	rep.Results = append(rep.Results, r)
	return nil
}

// samePath compares Windows paths, which are case-insensitive.
func samePath(a, b string) bool {
	return strings.EqualFold(filepath.Clean(a), filepath.Clean(b))
}

func removeAllowedIDs(ctx context.Context, env *Env, ids []string) (removed []string, err error) {
	st, err := env.openStore(env.DataDir)
	if err != nil {
		return nil, fmt.Errorf("opening Ferry's database in %s: %w", env.DataDir, err)
	}
	defer st.Close()
	cur, _, err := st.GetSetting(ctx, AllowedIDsSetting)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", AllowedIDsSetting, err)
	}
	existing, err := decodeIDs(cur)
	if err != nil {
		return nil, err
	}
	var keep []string
	for _, id := range normalizeIDs(existing) {
		if slices.Contains(ids, id) {
			removed = append(removed, id)
		} else {
			keep = append(keep, id)
		}
	}
	if len(removed) > 0 {
		if err := st.SetSetting(ctx, AllowedIDsSetting, encodeIDs(keep)); err != nil {
			return nil, fmt.Errorf("saving %s: %w", AllowedIDsSetting, err)
		}
	}
	return removed, nil
}
