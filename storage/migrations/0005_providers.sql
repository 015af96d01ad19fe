-- Model providers the host may call. The API key is not here: it is a secret
-- ('provider.<id>.key' in secrets) or an environment variable named in api_key_env,
-- so that reading this table (listings, the options page) can never leak one.
CREATE TABLE providers (
    id             TEXT    PRIMARY KEY CHECK (id <> ''),
    kind           TEXT    NOT NULL CHECK (kind IN ('openai', 'anthropic')),
    base_url       TEXT    NOT NULL,
    model          TEXT    NOT NULL,
    context_window INTEGER NOT NULL DEFAULT 0 CHECK (context_window >= 0), -- 0: the kind's default
    max_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (max_tokens >= 0),     -- 0: the kind's default
    api_key_env    TEXT    NOT NULL DEFAULT '',
    is_default     INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
) STRICT;

-- At most one default, enforced by the database so two processes saving at once
-- cannot both win; the code keeps it at exactly one while any provider exists.
CREATE UNIQUE INDEX providers_one_default ON providers(is_default) WHERE is_default = 1;
