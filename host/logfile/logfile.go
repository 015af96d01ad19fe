// Package logfile is the host's log file: append-only, capped in size, rotated once,
// shared by every host process of one data directory.
package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// MaxBytes caps the log file; past it the file is rotated to ferry.log.1 so a
// long-lived host never fills the disk.
const MaxBytes = 5 << 20

// File is an append-only, size-capped log file. Several host processes may append
// to the same file; each keeps its own idea of the size, so rotation is approximate
// but the cap holds to within one process's writes.
type File struct {
	mu   sync.Mutex
	path string
	max  int64
	f    *os.File
	size int64
}

// Open opens (creating) the log at path with its directory.
func Open(path string, max int64) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating log directory: %w", err)
	}
	l := &File{path: path, max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past its cap.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size+int64(len(p)) > l.max && l.size > 0 {
		l.f.Close()
		os.Rename(l.path, l.path+".1") // best effort: another process may have rotated it
		if err := l.open(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// Close closes the file.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
