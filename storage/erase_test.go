package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func marker(t *testing.T, what string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return what + "-" + hex.EncodeToString(b)
}

// inFiles says which of the database's files hold s, as `strings ferry.db*` would
// find it.
func inFiles(t *testing.T, dbPath, s string) []string {
	t.Helper()
	var found []string
	for _, suffix := range []string{"", "-wal", "-journal"} {
		b, err := os.ReadFile(dbPath + suffix)
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(s)) {
			found = append(found, filepath.Base(dbPath+suffix))
		}
	}
	return found
}

// TestDeletedContentLeavesNoTrace is the finding: deleted workspace files and
// deleted secrets stayed readable in the database's free pages. After each
// deletion neither the database file nor its write-ahead log holds a byte of them,
// while the database stays open (as a running host keeps it).
func TestDeletedContentLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	path := db.Path()

	secret, replaced := marker(t, "sk-secret"), marker(t, "sk-old")
	small, big := marker(t, "small-file"), marker(t, "big-file")
	if err := db.SetSecret(ctx, "search.bing.key", []byte(replaced)); err != nil {
		t.Fatal(err)
	}
	if err := db.SetSecret(ctx, "search.bing.key", []byte(secret)); err != nil {
		t.Fatal(err)
	}
	// A small file lives in its row's page; a big one in overflow pages, with a
	// version kept of its first content.
	if _, err := db.WriteFile(ctx, "/notes/small.txt", []byte("note: "+small), ""); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := db.WriteFile(ctx, "/notes/big.txt", []byte(strings.Repeat(big+"\n", 3000)), ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := inFiles(t, path, secret); len(got) == 0 {
		t.Fatal("the secret is in no file before its deletion: the test could not fail")
	}
	if got := inFiles(t, path, replaced); len(got) != 0 {
		t.Errorf("a replaced secret is still in %v", got)
	}
	if err := db.DeleteSecret(ctx, "search.bing.key"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete(ctx, "/notes"); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{secret, small, big} {
		if got := inFiles(t, path, m); len(got) != 0 {
			t.Errorf("%s is still in %v after its deletion", m[:strings.IndexByte(m, '-')+7], got)
		}
	}
	var on int
	db.sql.QueryRowContext(ctx, `PRAGMA secure_delete`).Scan(&on)
	if on != 1 {
		t.Errorf("secure_delete is %d", on)
	}
}

// A database written before secure_delete was on may hold deleted content in its
// free pages; the first open cleans them once, and marks the file.
func TestOldDatabaseScrubbedOnce(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := db.Path()
	db.Close()
	old := marker(t, "sk-before-upgrade")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=secure_delete(0)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`PRAGMA user_version = 0`,
		`INSERT INTO secrets(key, value, updated_at) VALUES ('k', CAST('` + strings.Repeat(old, 200) + `' AS BLOB), 'now')`,
		`DELETE FROM secrets WHERE key = 'k'`,
		`PRAGMA wal_checkpoint(TRUNCATE)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	if got := inFiles(t, path, old); len(got) == 0 {
		t.Fatal("without secure_delete the deleted secret should linger: the test could not fail")
	}
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := inFiles(t, path, old); len(got) != 0 {
		t.Errorf("the old deleted secret is still in %v after the upgrade", got)
	}
	var v int
	db.sql.QueryRow(`PRAGMA user_version`).Scan(&v)
	if v != len(upkeeps) {
		t.Errorf("user_version %d after the scrub", v)
	}
}
