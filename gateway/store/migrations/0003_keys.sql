-- A user's further keys, each with a name, an optional expiry and its last use:
-- as a user's token, only a salted hash of each is kept.
CREATE TABLE user_keys (
	token_id     TEXT PRIMARY KEY,
	user_name    TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,
	name         TEXT NOT NULL,
	token_salt   TEXT NOT NULL,
	token_hash   TEXT NOT NULL,
	created_at   BIGINT NOT NULL,
	expires_at   BIGINT NOT NULL DEFAULT 0,
	last_used_at BIGINT NOT NULL DEFAULT 0,
	UNIQUE (user_name, name)
);
