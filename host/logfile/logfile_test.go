package logfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRotatesAtCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "ferry.log")
	lf, err := Open(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 39) + "\n")
	for i := 0; i < 10; i++ {
		lf.Write(line)
	}
	lf.Close()
	cur, _ := os.Stat(path)
	old, err := os.Stat(path + ".1")
	if err != nil {
		t.Fatal("no rotated file")
	}
	if cur.Size() > 100 || old.Size() > 100 {
		t.Fatalf("sizes %d and %d exceed the 100-byte cap", cur.Size(), old.Size())
	}
	if cur.Mode().Perm() != 0o600 {
		t.Fatalf("log mode %v, want 0600", cur.Mode().Perm())
	}
}
