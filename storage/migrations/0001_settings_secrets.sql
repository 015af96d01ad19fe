-- Settings are the user's choices; secrets are API keys and tokens that never leave
-- the host (no protocol method returns a value from this table).
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE secrets (
    key        TEXT PRIMARY KEY,
    value      BLOB NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
