package storage

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// DatabaseFile is the name of Ferry's one database inside the data directory.
const DatabaseFile = "ferry.db"

// DefaultDataDir is where Ferry keeps its state: FERRY_HOME when set, otherwise the
// per-user application data folder of the OS.
func DefaultDataDir() (string, error) {
	return dataDirFor(runtime.GOOS, os.Getenv, os.UserHomeDir)
}

func dataDirFor(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	if d := getenv("FERRY_HOME"); d != "" {
		return filepath.Abs(d)
	}
	switch goos {
	case "windows":
		if d := getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "Ferry"), nil
		}
		return "", errors.New("LOCALAPPDATA is not set; set FERRY_HOME to choose Ferry's data directory")
	case "darwin":
		h, err := home()
		if err != nil {
			return "", err
		}
		return filepath.Join(h, "Library", "Application Support", "Ferry"), nil
	default:
		if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, "ferry"), nil
		}
		h, err := home()
		if err != nil {
			return "", err
		}
		return filepath.Join(h, ".local", "share", "ferry"), nil
	}
}

// LogPath is the host's log file inside dataDir.
func LogPath(dataDir string) string {
	return filepath.Join(dataDir, "logs", "ferry.log")
}
