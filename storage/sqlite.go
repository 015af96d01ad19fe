package storage

// The database helpers every table of the package shares: one write transaction,
// statements prepared once, timestamps.

import (
	"context"
	"database/sql"
	"time"
)

// writeTx runs fn in one transaction. The database opens with _txlock=immediate, so
// BEGIN already holds the write lock: what fn reads (usage, the quota, whether a path
// is free) cannot change under it before it commits, even from another process.
func (db *DB) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// stmt returns query prepared once per database, bound to tx when tx is not nil.
// Parsing the SQL was a third of a workspace write's CPU time; a *sql.Stmt keeps one
// prepared statement per pooled connection, and DB.Close releases them all.
func (db *DB) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	v, ok := db.stmts.Load(query)
	if !ok {
		s, err := db.sql.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		if v, ok = db.stmts.LoadOrStore(query, s); ok {
			s.Close()
		} else {
			v = s
		}
	}
	if tx != nil {
		return tx.StmtContext(ctx, v.(*sql.Stmt)), nil
	}
	return v.(*sql.Stmt), nil
}

type rowScanner interface{ Scan(dest ...any) error }
