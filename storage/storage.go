// Package storage keeps all of Ferry's state in one SQLite database: settings and
// secrets now, and whatever later features add through migrations. Several host
// processes (one per browser or profile) may open the same file at once.
package storage

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver: no cgo, so ferry cross-compiles

	"github.com/ferryhq/ferry/storage/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrSchemaTooNew means a newer ferry has migrated the database. Nothing is changed: an
// older binary must not write to tables it does not understand.
var ErrSchemaTooNew = errors.New("database schema is newer than this ferry")

// DB is the open database.
type DB struct {
	sql  *sql.DB
	path string
	// Now is the clock behind every timestamp written; tests replace it.
	Now func() time.Time

	stmts sync.Map // query → *sql.Stmt, prepared once (see stmt)
}

// Open creates dataDir if needed, makes it the user's own (SecureDataDir: refused
// when another user owns it), opens (or creates) its database and brings the schema
// up to date.
func Open(dataDir string) (*DB, error) {
	if _, err := SecureDataDir(dataDir); err != nil {
		return nil, err
	}
	return OpenFile(filepath.Join(dataDir, DatabaseFile))
}

// OpenFile opens the database at path, creating it with mode 0600 (it holds secrets).
func OpenFile(path string) (*DB, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	f.Close()
	// WAL lets browsers' host processes read while another writes; busy_timeout makes a
	// writer wait for another process's write instead of failing at once; foreign keys
	// are off in SQLite unless asked for on every connection. _txlock=immediate takes
	// the write lock at BEGIN, so two processes never both read-then-upgrade and
	// deadlock.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// What a delete or an update frees is overwritten with zeros (erase.go).
	q.Add("_pragma", "secure_delete(1)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	db := &DB{sql: sqldb, path: path, Now: time.Now}
	if err := db.migrate(context.Background()); err != nil {
		sqldb.Close()
		return nil, err
	}
	if err := db.upkeep(context.Background()); err != nil {
		sqldb.Close()
		return nil, err
	}
	return db, nil
}

// upkeeps are repairs of what an older ferry wrote that SQL migrations cannot make
// (they run inside a transaction and know no Unicode), each run once per database
// file: the header's user_version counts how many are done.
var upkeeps = []struct {
	what string
	run  func(*DB, context.Context) error
}{
	{"cleaning the free pages", (*DB).scrubFreePages},
	{"normalising workspace paths", (*DB).normalizeWorkspacePaths},
}

// errUpkeepLater: another process holds the database in a way the repair cannot
// work around now; the next open tries again.
var errUpkeepLater = errors.New("database busy: upkeep postponed")

func (db *DB) upkeep(ctx context.Context) error {
	var done int
	if err := db.sql.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&done); err != nil {
		return fmt.Errorf("reading %s: %w", db.path, err)
	}
	for i := done; i < len(upkeeps); i++ {
		if err := upkeeps[i].run(db, ctx); errors.Is(err, errUpkeepLater) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s of %s: %w", upkeeps[i].what, db.path, err)
		}
		if _, err := db.sql.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, i+1)); err != nil {
			return fmt.Errorf("%s of %s: %w", upkeeps[i].what, db.path, err)
		}
	}
	return nil
}

// Close closes the database; the WAL is checkpointed by SQLite when the last
// connection goes.
func (db *DB) Close() error {
	db.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	return db.sql.Close()
}

// Path is the database file.
func (db *DB) Path() string { return db.path }

// Size is the bytes the database occupies on disk, write-ahead log included.
func (db *DB) Size() int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if st, err := os.Stat(db.path + suffix); err == nil {
			n += st.Size()
		}
	}
	return n
}

func (db *DB) now() string { return db.Now().UTC().Format(time.RFC3339Nano) }

func loadMigrations() ([]migrate.Step, error) { return migrate.Load(migrationFiles, "migrations") }

// SchemaVersion is the newest migration this binary carries.
func SchemaVersion() int {
	ms, _ := loadMigrations()
	return len(ms)
}

// migrate applies each pending migration in its own transaction. Another process may
// be migrating the same file at the same moment, so the version is re-read inside the
// write transaction before anything is applied.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	// Every host start comes here: when the schema is current (the usual case) one
	// read settles it, without taking the write lock once per migration.
	if current, err := db.schemaVersion(ctx, db.sql); err == nil {
		if current > len(ms) {
			return db.tooNew(current, len(ms))
		}
		if current == len(ms) {
			return nil
		}
	}
	if _, err := db.sql.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("preparing database %s: %w", db.path, err)
	}
	for _, m := range ms {
		if err := db.apply(ctx, m, len(ms)); err != nil {
			return err
		}
	}
	// A database already newer than every migration we have applies nothing above.
	current, err := db.schemaVersion(ctx, db.sql)
	if err != nil {
		return err
	}
	if current > len(ms) {
		return db.tooNew(current, len(ms))
	}
	return nil
}

func (db *DB) apply(ctx context.Context, m migrate.Step, known int) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrating database %s: %w", db.path, err)
	}
	defer tx.Rollback()
	current, err := db.schemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if current > known {
		return db.tooNew(current, known)
	}
	if current >= m.Version {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, db.now()); err != nil {
		return fmt.Errorf("recording migration %d: %w", m.Version, err)
	}
	return tx.Commit()
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (db *DB) schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading schema version of %s: %w", db.path, err)
	}
	return v, nil
}

func (db *DB) tooNew(current, known int) error {
	return fmt.Errorf("%w: %s is at schema version %d but this ferry knows only up to %d; install the newer ferry that wrote it (the database was left untouched)",
		ErrSchemaTooNew, db.path, current, known)
}
