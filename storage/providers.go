package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ProviderConfig is one configured model provider as stored. It holds no key: see
// ProviderSecretKey.
type ProviderConfig struct {
	ID            string
	Kind          string // "openai" or "anthropic"
	BaseURL       string
	Model         string
	ContextWindow int    // 0: the kind's default
	MaxTokens     int    // 0: the kind's default
	APIKeyEnv     string // when set, the key is read from this environment variable
	TextOnly      bool   // the model takes no images
	// Request options ("auto" or "" : detected); see the providers table.
	StreamUsage    string
	MaxTokensField string
	APIVersion     string
	SendReasoning  string
	PromptCache    string
	Default        bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// ErrProviderNotFound means no provider has the asked id.
var ErrProviderNotFound = NewError(NotFound, "no such model provider")

// ProviderSecretKey names the secret that holds a provider's API key.
func ProviderSecretKey(id string) string { return "provider." + id + ".key" }

const providerColumns = `id, kind, base_url, model, context_window, max_tokens, api_key_env, is_default, created_at, updated_at, text_only,
	stream_usage, max_tokens_field, api_version, send_reasoning, prompt_cache`

func scanProvider(s rowScanner) (ProviderConfig, error) {
	var p ProviderConfig
	var created, updated string
	if err := s.Scan(&p.ID, &p.Kind, &p.BaseURL, &p.Model, &p.ContextWindow, &p.MaxTokens, &p.APIKeyEnv,
		&p.Default, &created, &updated, &p.TextOnly, &p.StreamUsage, &p.MaxTokensField, &p.APIVersion, &p.SendReasoning, &p.PromptCache); err != nil {
		return p, err
	}
	p.CreatedAt, p.UpdatedAt = parseTime(created), parseTime(updated)
	return p, nil
}

// SaveProvider creates or replaces a provider and says whether it existed. Exactly
// one provider is the default while any exists: Default true makes p the default;
// false leaves the default where it is, except that the first provider saved, or
// one saved when no default exists, becomes it. The returned config says which.
func (db *DB) SaveProvider(ctx context.Context, p ProviderConfig) (saved ProviderConfig, existed bool, err error) {
	if p.ID == "" {
		return ProviderConfig{}, false, NewError(Invalid, "a provider needs an id")
	}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM providers WHERE id = ?`, p.ID).Scan(&n); err != nil {
			return err
		}
		existed = n > 0
		var others int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM providers WHERE is_default = 1 AND id <> ?`, p.ID).Scan(&others); err != nil {
			return err
		}
		makeDefault := p.Default || others == 0
		if makeDefault {
			if _, err := tx.ExecContext(ctx, `UPDATE providers SET is_default = 0 WHERE is_default = 1 AND id <> ?`, p.ID); err != nil {
				return err
			}
		}
		now := db.now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO providers(`+providerColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET kind = excluded.kind, base_url = excluded.base_url, model = excluded.model,
				context_window = excluded.context_window, max_tokens = excluded.max_tokens,
				api_key_env = excluded.api_key_env, is_default = excluded.is_default, updated_at = excluded.updated_at,
				text_only = excluded.text_only, stream_usage = excluded.stream_usage, max_tokens_field = excluded.max_tokens_field,
				api_version = excluded.api_version, send_reasoning = excluded.send_reasoning, prompt_cache = excluded.prompt_cache`,
			p.ID, p.Kind, p.BaseURL, p.Model, p.ContextWindow, p.MaxTokens, p.APIKeyEnv, makeDefault, now, now, p.TextOnly,
			auto(p.StreamUsage), auto(p.MaxTokensField), p.APIVersion, auto(p.SendReasoning), auto(p.PromptCache)); err != nil {
			return err
		}
		saved, err = scanProvider(tx.QueryRowContext(ctx, `SELECT `+providerColumns+` FROM providers WHERE id = ?`, p.ID))
		return err
	})
	if err != nil {
		return ProviderConfig{}, false, fmt.Errorf("saving provider %q: %w", p.ID, err)
	}
	return saved, existed, nil
}

// auto is a switch as stored: "" means detected.
func auto(v string) string {
	if v == "" {
		return "auto"
	}
	return v
}

// Provider returns one provider, or ErrProviderNotFound.
func (db *DB) Provider(ctx context.Context, id string) (ProviderConfig, error) {
	p, err := scanProvider(db.sql.QueryRowContext(ctx, `SELECT `+providerColumns+` FROM providers WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ProviderConfig{}, fmt.Errorf("%w %q", ErrProviderNotFound, id)
	}
	if err != nil {
		return ProviderConfig{}, fmt.Errorf("reading provider %q: %w", id, err)
	}
	return p, nil
}

// Providers lists every provider, the default first, then by id.
func (db *DB) Providers(ctx context.Context) ([]ProviderConfig, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT `+providerColumns+` FROM providers ORDER BY is_default DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("listing providers: %w", err)
	}
	defer rows.Close()
	var out []ProviderConfig
	for rows.Next() {
		p, err := scanProvider(rows)
		if err != nil {
			return nil, fmt.Errorf("listing providers: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// DefaultProvider returns the default provider, or ErrProviderNotFound when none is
// configured.
func (db *DB) DefaultProvider(ctx context.Context) (ProviderConfig, error) {
	p, err := scanProvider(db.sql.QueryRowContext(ctx, `SELECT `+providerColumns+` FROM providers WHERE is_default = 1`))
	if errors.Is(err, sql.ErrNoRows) {
		return ProviderConfig{}, fmt.Errorf("%w: none is configured", ErrProviderNotFound)
	}
	if err != nil {
		return ProviderConfig{}, fmt.Errorf("reading the default provider: %w", err)
	}
	return p, nil
}

// SetDefaultProvider makes id the default.
func (db *DB) SetDefaultProvider(ctx context.Context, id string) error {
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM providers WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w %q", ErrProviderNotFound, id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE providers SET is_default = 0 WHERE is_default = 1 AND id <> ?`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE providers SET is_default = 1, updated_at = ? WHERE id = ?`, db.now(), id)
		return err
	})
	if err != nil && !errors.Is(err, ErrProviderNotFound) {
		return fmt.Errorf("setting the default provider: %w", err)
	}
	return err
}

// DeleteProvider removes a provider and its stored key. When it was the default, the
// oldest remaining provider becomes the default; newDefault names it ("" when none
// remains or the default did not change).
func (db *DB) DeleteProvider(ctx context.Context, id string) (newDefault string, err error) {
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		var wasDefault bool
		err := tx.QueryRowContext(ctx, `SELECT is_default FROM providers WHERE id = ?`, id).Scan(&wasDefault)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w %q", ErrProviderNotFound, id)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM providers WHERE id = ?`, id); err != nil {
			return err
		}
		// The key goes with the provider: a later provider of the same id must not
		// silently inherit it.
		if _, err := tx.ExecContext(ctx, `DELETE FROM secrets WHERE key = ?`, ProviderSecretKey(id)); err != nil {
			return err
		}
		if !wasDefault {
			return nil
		}
		err = tx.QueryRowContext(ctx, `SELECT id FROM providers ORDER BY created_at, id LIMIT 1`).Scan(&newDefault)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE providers SET is_default = 1 WHERE id = ?`, newDefault)
		return err
	})
	if err != nil && !errors.Is(err, ErrProviderNotFound) {
		return "", fmt.Errorf("removing provider %q: %w", id, err)
	}
	if err == nil {
		db.purge(ctx) // its key went with it
	}
	return newDefault, err
}
