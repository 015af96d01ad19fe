package store

import (
	"context"
	"database/sql"
	"time"
)

// Key is one of a user's further keys.
type Key struct {
	User      string    `json:"user"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"` // zero: never
	LastUsed  time.Time `json:"last_used,omitzero"`  // zero: not yet

	TokenID   string `json:"-"`
	TokenSalt string `json:"-"`
	TokenHash string `json:"-"`
}

// Expired tells whether the key no longer works at now.
func (k *Key) Expired(now time.Time) bool { return !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) }

// AddKey gives a user a further key, whose token's hash is given.
func (s *Store) AddKey(ctx context.Context, actor string, k Key, tok TokenHash) error {
	if err := ValidName("key", k.Name); err != nil {
		return err
	}
	exp := int64(0)
	if !k.ExpiresAt.IsZero() {
		exp = k.ExpiresAt.UnixMicro()
	}
	detail := map[string]any{"key": k.Name, "expires_at": k.ExpiresAt}
	err := s.change(ctx, actor, "key.add", k.User, detail, func(t *sql.Tx) error {
		var n int
		if err := t.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM users WHERE name = ?`), k.User).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return errorf(ErrNotFound, "no user %q", k.User)
		}
		_, err := t.ExecContext(ctx, s.q(`INSERT INTO user_keys(token_id, user_name, name, token_salt, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			tok.ID, k.User, k.Name, tok.Salt, tok.Hash, s.micros(), exp)
		return err
	})
	if isUnique(err) {
		return errorf(ErrExists, "user %q already has a key named %q", k.User, k.Name)
	}
	return err
}

// RemoveKey revokes a user's key.
func (s *Store) RemoveKey(ctx context.Context, actor, user, name string) error {
	return s.change(ctx, actor, "key.remove", user, map[string]any{"key": name}, func(t *sql.Tx) error {
		return affect(errorf(ErrNotFound, "user %q has no key %q", user, name))(t.ExecContext(ctx, s.q(`DELETE FROM user_keys WHERE user_name = ? AND name = ?`), user, name))
	})
}

// Keys lists the further keys of every user, or of one.
func (s *Store) Keys(ctx context.Context, user string) ([]Key, error) {
	var w where
	w.eq("user_name", user)
	return queryAll(ctx, s, `SELECT user_name, name, created_at, expires_at, last_used_at, token_id, token_salt, token_hash FROM user_keys`+w.String()+` ORDER BY user_name, name`, w.args,
		func(sc interface{ Scan(...any) error }) (Key, error) {
			var k Key
			var created, exp, used int64
			err := sc.Scan(&k.User, &k.Name, &created, &exp, &used, &k.TokenID, &k.TokenSalt, &k.TokenHash)
			k.CreatedAt = time.UnixMicro(created).UTC()
			if exp > 0 {
				k.ExpiresAt = time.UnixMicro(exp).UTC()
			}
			if used > 0 {
				k.LastUsed = time.UnixMicro(used).UTC()
			}
			return k, err
		})
}

// TouchKeys records when keys were last used; it does not change the
// configuration's generation (a use is not a change).
func (s *Store) TouchKeys(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	return s.tx(ctx, func(t *sql.Tx) error {
		for id, at := range used {
			if _, err := t.ExecContext(ctx, s.q(`UPDATE user_keys SET last_used_at = ? WHERE token_id = ? AND last_used_at < ?`), at.UnixMicro(), id, at.UnixMicro()); err != nil {
				return err
			}
		}
		return nil
	})
}
