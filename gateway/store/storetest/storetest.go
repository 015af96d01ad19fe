// Package storetest gives tests a fresh gateway database of each engine: a SQLite
// file in the test's temporary directory, and, when FERRY_TEST_POSTGRES names a
// PostgreSQL server (scripts/test starts a throwaway one), a database of its own
// on that server, dropped when the test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// PostgresEnv names the variable holding the URL of a PostgreSQL server whose user
// may create databases.
const PostgresEnv = "FERRY_TEST_POSTGRES"

// RequireEnv, set to 1, makes a missing PostgreSQL fail the test instead of
// skipping its PostgreSQL half (scripts/test sets it).
const RequireEnv = "FERRY_TEST_POSTGRES_REQUIRED"

// SQLite is a fresh database file.
func SQLite(tb testing.TB) string {
	return filepath.Join(tb.TempDir(), "gateway.db")
}

// Postgres creates an empty database on the test server and returns its URL; it
// skips the test (or fails it, under RequireEnv) when no server is configured.
func Postgres(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("%s is not set but %s=1: start PostgreSQL (scripts/test does)", PostgresEnv, RequireEnv)
		}
		tb.Skipf("PostgreSQL not configured (%s); scripts/test starts one", PostgresEnv)
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", PostgresEnv, err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	var r [6]byte
	rand.Read(r[:])
	name := "ferry_test_" + hex.EncodeToString(r[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("creating test database on %s: %v", u.Host, err)
	}
	tb.Cleanup(func() {
		a, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer a.Close()
		a.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	u.Path = "/" + name
	return u.String()
}

// Engines is both engines: SQLite always, PostgreSQL when configured (its subtest
// skips otherwise). Each call to DSN gives a fresh database.
func Engines() []string { return []string{"sqlite", "postgres"} }

// DSN is a fresh database of the engine.
func DSN(tb testing.TB, engine string) string {
	if engine == "postgres" {
		return Postgres(tb)
	}
	return SQLite(tb)
}
