// Package install registers the Ferry host with Chrome-family browsers through their
// native-messaging manifests, removes that registration, and checks a whole installation
// end to end (ferry doctor).
//
// Everything that depends on the operating system comes through an Env, so the paths
// and registry keys of Linux, macOS and Windows are all exercised by tests on any OS.
package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ferryhq/ferry/storage"
)

// Store is the part of Ferry's database the installer uses: the allowed extension IDs
// live in a setting, because the host reads them from there when it checks a caller.
type Store interface {
	GetSetting(ctx context.Context, key string) (string, bool, error)
	SetSetting(ctx context.Context, key, value string) error
	Close() error
}

// Env is the outside world as the installer sees it.
type Env struct {
	GOOS   string              // "linux", "darwin" or "windows"
	Home   string              // the user's home directory
	Getenv func(string) string // XDG_CONFIG_HOME, LOCALAPPDATA, PATH-independent lookups
	// LookPath finds a browser's executable; nil means "never found", so detection
	// relies on config directories alone.
	LookPath func(string) (string, error)
	Registry Registry // Windows only
	DataDir  string   // Ferry's data directory (FERRY_HOME or the per-OS default)
	Exe      string   // absolute path of the ferry binary the manifests point at
	// OpenStore opens the database in dataDir, creating and migrating it as needed.
	OpenStore func(dataDir string) (Store, error)
	// VersionTimeout bounds `<path> version` in doctor, so a hung binary cannot hang it.
	VersionTimeout time.Duration
}

// DefaultEnv describes this machine and this binary.
func DefaultEnv() (*Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("cannot find your home directory (set HOME): %w", err)
	}
	dataDir, err := storage.DefaultDataDir()
	if err != nil {
		return nil, fmt.Errorf("cannot find Ferry's data directory (set FERRY_HOME): %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find the path of this ferry binary: %w", err)
	}
	// The browser starts whatever the manifest names; a symlink that is later repointed
	// (package managers do that) would silently change the host, so pin the real file.
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	return &Env{
		GOOS:           runtime.GOOS,
		Home:           home,
		Getenv:         os.Getenv,
		LookPath:       exec.LookPath,
		Registry:       systemRegistry(),
		DataDir:        dataDir,
		Exe:            exe,
		OpenStore:      OpenStorage,
		VersionTimeout: 5 * time.Second,
	}, nil
}

// OpenStorage opens Ferry's real database; it is the default Env.OpenStore.
func OpenStorage(dataDir string) (Store, error) {
	db, err := storage.Open(dataDir)
	if err != nil {
		return nil, err
	}
	return db, nil
}

func (e *Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e *Env) openStore(dataDir string) (Store, error) {
	if e.OpenStore == nil {
		return OpenStorage(dataDir)
	}
	return e.OpenStore(dataDir)
}

func (e *Env) versionTimeout() time.Duration {
	if e.VersionTimeout <= 0 {
		return 5 * time.Second
	}
	return e.VersionTimeout
}
