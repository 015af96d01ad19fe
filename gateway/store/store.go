// Package store keeps the gateway's state: users and their token hashes, teams,
// upstreams and their keys, routes, settings, quota counters and reservations, the
// audit of requests and admin actions, and daily usage. One implementation serves
// two engines: an embedded SQLite file (modernc, as the host) by default, and
// PostgreSQL (pgx) when several gateway processes share one database. Both run the
// same embedded migrations, each in its own transaction.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" for database/sql
	_ "modernc.org/sqlite"             // registers the pure-Go "sqlite" driver

	"github.com/ferryhq/ferry/storage/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Engines.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Errors callers tell apart. Each wraps a message that names the thing.
var (
	ErrNotFound      = errors.New("not found")
	ErrExists        = errors.New("already exists")
	ErrInvalid       = errors.New("invalid")
	ErrInUse         = errors.New("in use")
	ErrSchemaTooNew  = errors.New("database schema is newer than this ferry")
	errSerialization = errors.New("serialization")
)

func errorf(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

// Store is an open gateway database.
type Store struct {
	db     *sql.DB
	engine string
	where  string // the file, or the PostgreSQL host and database (never the password)
	// Now is the clock behind every timestamp; tests replace it.
	Now func() time.Time
	// seal seals upstream keys at rest (nil: no operator key given).
	seal *sealer
	// wmu serialises this process's SQLite writers: they would otherwise meet in
	// SQLite's busy handler, which sleeps in steps of milliseconds.
	wmu sync.Mutex
}

// IsPostgres tells whether dsn names a PostgreSQL database rather than a file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens (or creates) the database dsn names, a file path or a postgres:// URL,
// and brings its schema up to date.
func Open(ctx context.Context, dsn string) (*Store, error) {
	var s *Store
	if IsPostgres(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, errorf(ErrInvalid, "database URL: %v", redactURLError(err))
		}
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("opening PostgreSQL at %s: %w", u.Redacted(), err)
		}
		db.SetMaxOpenConns(32)
		db.SetMaxIdleConns(32)
		db.SetConnMaxIdleTime(5 * time.Minute)
		s = &Store{db: db, engine: Postgres, where: u.Host + u.Path, Now: time.Now}
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", s.where, err)
		}
	} else {
		if dsn == "" {
			return nil, errorf(ErrInvalid, "no database given: --db PATH or --db postgres://…")
		}
		path, err := filepath.Abs(dsn)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("creating the database's directory: %w", err)
		}
		// The file holds the upstreams' keys: owner-only from its first byte.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening database %s: %w", path, err)
		}
		f.Close()
		// WAL lets the CLI read and write while serve runs; busy_timeout makes a
		// writer wait for another process's write rather than fail; foreign keys
		// are off unless asked for on every connection; _txlock=immediate takes the
		// write lock at BEGIN, so that a quota admission (read, then increment)
		// never interleaves with another's, in this process or any other.
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "foreign_keys(1)")
		q.Add("_pragma", "synchronous(NORMAL)")
		// A removed or replaced upstream key is overwritten in the file, not left in a
		// free page for anyone who copies it to read.
		q.Add("_pragma", "secure_delete(1)")
		q.Set("_txlock", "immediate")
		db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
		if err != nil {
			return nil, fmt.Errorf("opening database %s: %w", path, err)
		}
		db.SetMaxOpenConns(8)
		s = &Store{db: db, engine: SQLite, where: path, Now: time.Now}
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	var err error
	if s.seal, err = sealerFromEnv(); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// redactURLError keeps a password out of a URL parse error, which quotes the URL.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// scrub moves what a write overwrote out of SQLite's write-ahead log, where the old
// page (an old key) would otherwise stay until the next automatic checkpoint. It is
// best effort: a reader holding the log open only delays it.
func (s *Store) scrub(ctx context.Context) {
	if s.engine == SQLite {
		s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	}
}

// Engine is SQLite or Postgres.
func (s *Store) Engine() string { return s.engine }

// Where names the database for messages: the file, or host and database name.
func (s *Store) Where() string { return s.where }

// q adapts a query written with ? placeholders to the engine.
func (s *Store) q(query string) string {
	if s.engine != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

func (s *Store) micros() int64 { return s.Now().UnixMicro() }

// NewID is a time-ordered identifier: hex microseconds, then random hex, so that
// ordering by id is ordering by time across processes.
func NewID(now time.Time) string {
	var r [5]byte
	rand.Read(r[:])
	return fmt.Sprintf("%014x%s", now.UnixMicro(), hex.EncodeToString(r[:]))
}

// tx runs fn in a write transaction. SQLite writers of this process take turns
// first; PostgreSQL's serialisation failures are retried a few times.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	if s.engine == SQLite {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.tx1(ctx, fn)
		if !isRetryable(err) {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	return err
}

func (s *Store) tx1(ctx context.Context, fn func(*sql.Tx) error) error {
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("database %s: %w", s.where, err)
	}
	if err := fn(t); err != nil {
		t.Rollback()
		return err
	}
	return t.Commit()
}

// isRetryable: PostgreSQL's serialization_failure and deadlock_detected.
func isRetryable(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "SQLSTATE 40001") || strings.Contains(m, "SQLSTATE 40P01")
}

// isUnique: a unique or primary key constraint refused the row.
func isUnique(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "UNIQUE constraint failed") || strings.Contains(m, "SQLSTATE 23505")
}

// isForeignKey: a foreign key refused the change.
func isForeignKey(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "FOREIGN KEY constraint failed") || strings.Contains(m, "SQLSTATE 23503")
}

// bumpGeneration marks the configuration changed, inside the change's transaction.
func (s *Store) bumpGeneration(ctx context.Context, t *sql.Tx) error {
	_, err := t.ExecContext(ctx, s.q(`UPDATE meta SET value = value + 1 WHERE key = 'generation'`))
	return err
}

// Generation is the configuration's current generation.
func (s *Store) Generation(ctx context.Context) (int64, error) {
	var g int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT value FROM meta WHERE key = 'generation'`)).Scan(&g)
	return g, err
}

func loadMigrations() ([]migrate.Step, error) { return migrate.Load(migrationFiles, "migrations") }

// SchemaVersion is the newest migration this binary carries.
func SchemaVersion() int {
	ms, _ := loadMigrations()
	return len(ms)
}

// migrationLock is the PostgreSQL advisory lock that makes processes migrating one
// database at the same moment take turns (SQLite's immediate transactions do that
// by themselves).
const migrationLock = 0x6665727279 // "ferry"

// migrate applies each pending migration in its own transaction, re-reading the
// version inside it: another process may be migrating at the same moment.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	if cur, err := s.schemaVersion(ctx, s.db); err == nil {
		if cur > len(ms) {
			return s.tooNew(cur, len(ms))
		}
		if cur == len(ms) {
			return nil
		}
	}
	if err := s.tx(ctx, func(t *sql.Tx) error {
		if err := s.lockMigrations(ctx, t); err != nil {
			return err
		}
		_, err := t.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at BIGINT NOT NULL
		)`)
		return err
	}); err != nil {
		return fmt.Errorf("preparing database %s: %w", s.where, err)
	}
	for _, m := range ms {
		err := s.tx(ctx, func(t *sql.Tx) error {
			if err := s.lockMigrations(ctx, t); err != nil {
				return err
			}
			cur, err := s.schemaVersion(ctx, t)
			if err != nil {
				return err
			}
			if cur > len(ms) {
				return s.tooNew(cur, len(ms))
			}
			if cur >= m.Version {
				return nil
			}
			if _, err := t.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d (%s) on %s: %w", m.Version, m.Name, s.where, err)
			}
			_, err = t.ExecContext(ctx, s.q(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`),
				m.Version, m.Name, s.micros())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) lockMigrations(ctx context.Context, t *sql.Tx) error {
	if s.engine != Postgres {
		return nil
	}
	_, err := t.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock))
	return err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading schema version of %s: %w", s.where, err)
	}
	return v, nil
}

func (s *Store) tooNew(cur, known int) error {
	return fmt.Errorf("%w: %s is at gateway schema version %d but this ferry knows only up to %d; run the newer ferry that wrote it (nothing was changed)",
		ErrSchemaTooNew, s.where, cur, known)
}

// boolInt stores a bool as the INTEGER both engines read alike.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
