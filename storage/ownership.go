package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// The data directory holds the person's keys, files and conversations: it must be
// theirs alone. At every open the host makes it so for what it owns, and refuses
// what belongs to someone else.

// Loosened is one file or folder whose mode let other users in.
type Loosened struct {
	Path string
	Mode fs.FileMode // as found
	Want fs.FileMode
}

func (l Loosened) String() string {
	return fmt.Sprintf("%s was %04o (other users could %s it), wants %04o", l.Path, l.Mode.Perm(), reach(l.Mode), l.Want)
}

func reach(m fs.FileMode) string {
	var can []string
	if m&0o044 != 0 {
		can = append(can, "read")
	}
	if m&0o022 != 0 {
		can = append(can, "change")
	}
	if len(can) == 0 {
		return "enter"
	}
	return strings.Join(can, " and ")
}

// OwnerError refuses a data directory, or a file in it, that belongs to another
// user: it may hold their secrets, and whatever ferry wrote there they could read.
type OwnerError struct {
	Path       string
	DataDir    string
	Owner, Uid int
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("%s belongs to another user (uid %d) but ferry runs as uid %d: it may hold their keys, and they could read yours; run ferry as the user who owns it, or give it to this user with `sudo chown -R %d %s`, or choose another data directory with FERRY_HOME",
		e.Path, e.Owner, e.Uid, e.Uid, shellQuote(e.DataDir))
}

// ErrNotOwner is what an *OwnerError is.
var ErrNotOwner = errors.New("data directory belongs to another user")

func (e *OwnerError) Is(target error) bool { return target == ErrNotOwner }

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// private lists what the data directory keeps and the mode each should have.
func private(dir string) []Loosened {
	db := filepath.Join(dir, DatabaseFile)
	logs := filepath.Dir(LogPath(dir))
	return []Loosened{
		{Path: dir, Want: 0o700},
		{Path: db, Want: 0o600}, {Path: db + "-wal", Want: 0o600}, {Path: db + "-shm", Want: 0o600},
		{Path: logs, Want: 0o700},
		{Path: LogPath(dir), Want: 0o600}, {Path: LogPath(dir) + ".1", Want: 0o600},
	}
}

// CheckDataDir looks at the data directory, its database and its logs as they are
// (missing ones are skipped): an *OwnerError for the first that belongs to another
// user, else every one whose mode lets other users in. With tighten, those are
// chmod-ed to their mode (0700 folders, 0600 files) and still reported. On Windows,
// where access is by ACL and the folder is the user's profile, there is nothing to
// check.
func CheckDataDir(dir string, tighten bool) ([]Loosened, error) {
	if runtime.GOOS == "windows" {
		return nil, nil
	}
	uid := os.Getuid()
	var out []Loosened
	for _, p := range private(dir) {
		fi, err := os.Stat(p.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, err
		}
		if owner, ok := ownerOf(fi); ok && owner != uid {
			return out, &OwnerError{Path: p.Path, DataDir: dir, Owner: owner, Uid: uid}
		}
		if fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		p.Mode = fi.Mode().Perm()
		out = append(out, p)
		if tighten {
			if err := os.Chmod(p.Path, p.Want); err != nil {
				return out, fmt.Errorf("tightening %s to %04o: %w", p.Path, p.Want, err)
			}
		}
	}
	return out, nil
}

// SecureDataDir makes dir the user's own before anything is kept in it: creates it
// (0700) when missing, refuses it when another user owns it, and tightens what
// ferry keeps there to 0700/0600. It returns what it tightened, for the log.
func SecureDataDir(dir string) ([]Loosened, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	return CheckDataDir(dir, true)
}
