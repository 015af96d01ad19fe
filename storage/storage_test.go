package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dir
}

func TestOpenCreatesPrivateDatabase(t *testing.T) {
	db, dir := openTemp(t)
	if db.Path() != filepath.Join(dir, DatabaseFile) {
		t.Fatalf("path = %s", db.Path())
	}
	st, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("database mode = %v, want 0600: it holds secrets", st.Mode().Perm())
	}
	var mode string
	db.sql.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
	var fk int
	db.sql.QueryRow(`PRAGMA foreign_keys`).Scan(&fk)
	if fk != 1 {
		t.Fatal("foreign keys are off")
	}
}

func TestMigrationsAreRecordedAndRunOnce(t *testing.T) {
	db, dir := openTemp(t)
	var n int
	db.sql.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n)
	if n != SchemaVersion() || n == 0 {
		t.Fatalf("%d migrations recorded, want %d", n, SchemaVersion())
	}
	ctx := context.Background()
	if err := db.SetSetting(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Opening again applies nothing and keeps the data.
	db2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	db2.sql.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n)
	if n != SchemaVersion() {
		t.Fatalf("reopen recorded %d migrations", n)
	}
	if v, ok, _ := db2.GetSetting(ctx, "k"); !ok || v != "v" {
		t.Fatalf("setting lost on reopen: %q %v", v, ok)
	}
}

func TestNewerSchemaIsRefusedAndLeftAlone(t *testing.T) {
	db, dir := openTemp(t)
	ctx := context.Background()
	db.SetSetting(ctx, "keep", "me")
	future := SchemaVersion() + 1
	if _, err := db.sql.Exec(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, 'from_the_future', 'x')`, future); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(filepath.Join(dir, DatabaseFile))

	_, err := Open(dir)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{strconv.Itoa(future), strconv.Itoa(SchemaVersion()), "newer ferry"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	after, _ := os.ReadFile(filepath.Join(dir, DatabaseFile))
	if string(before) != string(after) {
		t.Fatal("the refused database was modified")
	}
}

func TestSettingsAndSecrets(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	db.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	if _, ok, err := db.GetSetting(ctx, "missing"); ok || err != nil {
		t.Fatalf("missing setting: ok=%v err=%v", ok, err)
	}
	db.SetSetting(ctx, "a", "1")
	db.SetSetting(ctx, "a", "2")
	db.SetSetting(ctx, "b", "3")
	all, _ := db.ListSettings(ctx)
	if fmt.Sprint(all) != "map[a:2 b:3]" {
		t.Fatalf("settings = %v", all)
	}
	var at string
	db.sql.QueryRow(`SELECT updated_at FROM settings WHERE key='a'`).Scan(&at)
	if at != "2026-01-02T03:04:05Z" {
		t.Fatalf("updated_at = %q: the injected clock was not used", at)
	}
	db.DeleteSetting(ctx, "a")
	if _, ok, _ := db.GetSetting(ctx, "a"); ok {
		t.Fatal("deleted setting still there")
	}

	db.SetSecret(ctx, "openai", []byte("sk-123"))
	if v, ok, _ := db.Secret(ctx, "openai"); !ok || string(v) != "sk-123" {
		t.Fatalf("secret = %q %v", v, ok)
	}
	keys, _ := db.SecretKeys(ctx)
	if fmt.Sprint(keys) != "[openai]" {
		t.Fatalf("secret keys = %v", keys)
	}
	db.DeleteSecret(ctx, "openai")
	if _, ok, _ := db.Secret(ctx, "openai"); ok {
		t.Fatal("deleted secret still there")
	}
}

func TestDataDir(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"linux", nil, "/home/u/.local/share/ferry"},
		{"linux", map[string]string{"XDG_DATA_HOME": "/data"}, "/data/ferry"},
		{"linux", map[string]string{"XDG_DATA_HOME": "relative"}, "/home/u/.local/share/ferry"},
		{"linux", map[string]string{"FERRY_HOME": "/srv/ferry"}, "/srv/ferry"},
		{"darwin", nil, "/home/u/Library/Application Support/Ferry"},
		{"windows", map[string]string{"LOCALAPPDATA": `C:\Users\u\AppData\Local`}, filepath.Join(`C:\Users\u\AppData\Local`, "Ferry")},
	}
	for _, c := range cases {
		got, err := dataDirFor(c.goos, env(c.env), home)
		if err != nil || got != c.want {
			t.Errorf("%s %v: %q, %v; want %q", c.goos, c.env, got, err, c.want)
		}
	}
	if _, err := dataDirFor("windows", env(nil), home); err == nil {
		t.Error("windows without LOCALAPPDATA: want an error naming FERRY_HOME")
	}
}

// TestTwoProcessesWriteAtOnce is what happens when two browsers (or two profiles)
// each start a host on the same data directory: both write at the same time and
// neither loses a write or sees "database is locked".
func TestTwoProcessesWriteAtOnce(t *testing.T) {
	if os.Getenv("FERRY_STORAGE_WRITER") != "" {
		return // the child's part runs in TestHelperWriter
	}
	dir := t.TempDir()
	const each = 200
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
	cmd.Env = append(os.Environ(), "FERRY_STORAGE_WRITER="+dir, "FERRY_STORAGE_WRITES="+strconv.Itoa(each))
	out := make(chan []byte, 1)
	go func() { b, _ := cmd.CombinedOutput(); out <- b }()

	var wg sync.WaitGroup
	errs := make(chan error, each)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- writeMany(dir, "parent", each)
	}()
	wg.Wait()
	childOut := <-out
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("child writer failed: %s", childOut)
	}
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, _ := db.ListSettings(context.Background())
	if len(all) != 2*each {
		t.Fatalf("%d settings written, want %d: a write was lost", len(all), 2*each)
	}
}

func TestHelperWriter(t *testing.T) {
	dir := os.Getenv("FERRY_STORAGE_WRITER")
	if dir == "" {
		t.Skip("helper process for TestTwoProcessesWriteAtOnce")
	}
	n, _ := strconv.Atoi(os.Getenv("FERRY_STORAGE_WRITES"))
	if err := writeMany(dir, "child", n); err != nil {
		t.Fatal(err)
	}
}

// writeMany opens its own database (as a separate host would, migrations included) and
// writes n settings, each in its own transaction.
func writeMany(dir, who string, n int) error {
	db, err := Open(dir)
	if err != nil {
		return fmt.Errorf("%s: open: %w", who, err)
	}
	defer db.Close()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if err := db.SetSetting(ctx, fmt.Sprintf("%s.%d", who, i), "x"); err != nil {
			return fmt.Errorf("%s: write %d: %w", who, i, err)
		}
		if _, _, err := db.GetSetting(ctx, fmt.Sprintf("%s.%d", who, i)); err != nil {
			return fmt.Errorf("%s: read %d: %w", who, i, err)
		}
	}
	return nil
}
