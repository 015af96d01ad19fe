package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// GetSetting returns a setting's value and whether it is set.
func (db *DB) GetSetting(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := db.sql.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading setting %q: %w", key, err)
	}
	return v, true, nil
}

// SetSetting stores a setting, replacing any earlier value.
func (db *DB) SetSetting(ctx context.Context, key, value string) error {
	_, err := db.sql.ExecContext(ctx, `INSERT INTO settings(key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, value, db.now())
	if err != nil {
		return fmt.Errorf("writing setting %q: %w", key, err)
	}
	return nil
}

// DeleteSetting removes a setting; removing one that is not set is not an error.
func (db *DB) DeleteSetting(ctx context.Context, key string) error {
	if _, err := db.sql.ExecContext(ctx, `DELETE FROM settings WHERE key = ?`, key); err != nil {
		return fmt.Errorf("deleting setting %q: %w", key, err)
	}
	return nil
}

// ListSettings returns every stored setting, keyed by name.
func (db *DB) ListSettings(ctx context.Context) (map[string]string, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT key, value FROM settings ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("listing settings: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// SetSecret stores a secret. Secrets are read only by the host itself (to call a model
// vendor, say); nothing sends their values to the browser.
func (db *DB) SetSecret(ctx context.Context, key string, value []byte) error {
	_, err := db.sql.ExecContext(ctx, `INSERT INTO secrets(key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, value, db.now())
	if err != nil {
		return fmt.Errorf("writing secret %q: %w", key, err)
	}
	db.purge(ctx) // a replaced value is gone from the files too
	return nil
}

// Secret returns a secret's value and whether it is set.
func (db *DB) Secret(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := db.sql.QueryRowContext(ctx, `SELECT value FROM secrets WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading secret %q: %w", key, err)
	}
	return v, true, nil
}

// DeleteSecret removes a secret; removing one that is not set is not an error.
func (db *DB) DeleteSecret(ctx context.Context, key string) error {
	if _, err := db.sql.ExecContext(ctx, `DELETE FROM secrets WHERE key = ?`, key); err != nil {
		return fmt.Errorf("deleting secret %q: %w", key, err)
	}
	db.purge(ctx)
	return nil
}

// SecretKeys lists which secrets are set, never their values.
func (db *DB) SecretKeys(ctx context.Context) ([]string, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT key FROM secrets ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("listing secrets: %w", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
