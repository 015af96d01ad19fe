-- The gateway's schema. One file of SQL serves SQLite and PostgreSQL alike: only
-- types both read the same way (TEXT, BIGINT, INTEGER, DOUBLE PRECISION), keys made
-- in Go rather than by either engine's own sequences, and times as BIGINT
-- microseconds since the Unix epoch (UTC), so that a day or a minute is an integer
-- division in either engine.

-- meta holds the configuration generation: every change of users, teams, upstreams,
-- routes or settings bumps it in the same transaction, and each serving process
-- reloads its snapshot when it sees a new value.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value BIGINT NOT NULL
);
INSERT INTO meta(key, value) VALUES ('generation', 1);

CREATE TABLE settings (
	key        TEXT PRIMARY KEY,
	value      TEXT NOT NULL,
	updated_at BIGINT NOT NULL
);

CREATE TABLE teams (
	name         TEXT PRIMARY KEY,
	daily_tokens BIGINT NOT NULL DEFAULT 0,
	rpm          BIGINT NOT NULL DEFAULT 0,
	created_at   BIGINT NOT NULL
);

-- A user's token is never stored: token_id is its public lookup part, token_hash
-- the SHA-256 of token_salt and its secret part.
CREATE TABLE users (
	name         TEXT PRIMARY KEY,
	team         TEXT NOT NULL DEFAULT '',
	admin        INTEGER NOT NULL DEFAULT 0,
	disabled     INTEGER NOT NULL DEFAULT 0,
	daily_tokens BIGINT NOT NULL DEFAULT 0,
	rpm          BIGINT NOT NULL DEFAULT 0,
	models       TEXT NOT NULL DEFAULT '',
	token_id     TEXT NOT NULL UNIQUE,
	token_salt   TEXT NOT NULL,
	token_hash   TEXT NOT NULL,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL
);

CREATE TABLE upstreams (
	name       TEXT PRIMARY KEY,
	kind       TEXT NOT NULL,
	base_url   TEXT NOT NULL,
	api_key    TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);

CREATE TABLE routes (
	model          TEXT PRIMARY KEY,
	upstream       TEXT NOT NULL REFERENCES upstreams(name),
	upstream_model TEXT NOT NULL,
	fallbacks      TEXT NOT NULL DEFAULT '',
	created_at     BIGINT NOT NULL
);

-- quota_counters: one row per scope (a user's or a team's tokens or requests) and
-- bucket (the day or the minute). used is settled; reserved is held by requests in
-- flight, so that an admission sees what the others have taken before they finish.
CREATE TABLE quota_counters (
	scope    TEXT NOT NULL,
	bucket   BIGINT NOT NULL,
	used     BIGINT NOT NULL DEFAULT 0,
	reserved BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (scope, bucket)
);

-- reservations outlive a process that dies mid-request: another serving process
-- releases those whose instance stopped beating.
CREATE TABLE reservations (
	id         TEXT PRIMARY KEY,
	instance   TEXT NOT NULL,
	claims     TEXT NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE INDEX reservations_instance ON reservations(instance);

CREATE TABLE instances (
	id         TEXT PRIMARY KEY,
	addr       TEXT NOT NULL,
	started_at BIGINT NOT NULL,
	heartbeat  BIGINT NOT NULL
);

-- requests is the audit of every model request, and what usage is counted from.
CREATE TABLE requests (
	id             TEXT PRIMARY KEY,
	ts             BIGINT NOT NULL,
	user_name      TEXT NOT NULL,
	team           TEXT NOT NULL,
	dialect        TEXT NOT NULL,
	model          TEXT NOT NULL,
	upstream       TEXT NOT NULL,
	upstream_model TEXT NOT NULL,
	stream         INTEGER NOT NULL,
	status         INTEGER NOT NULL,
	error          TEXT NOT NULL,
	input_tokens   BIGINT NOT NULL,
	output_tokens  BIGINT NOT NULL,
	cached_tokens  BIGINT NOT NULL,
	estimated      INTEGER NOT NULL,
	latency_us     BIGINT NOT NULL,
	ttfb_us        BIGINT NOT NULL,
	attempts       INTEGER NOT NULL,
	trace_id       TEXT NOT NULL,
	client         TEXT NOT NULL
);
CREATE INDEX requests_ts ON requests(ts);
CREATE INDEX requests_user_ts ON requests(user_name, ts);
CREATE INDEX requests_trace ON requests(trace_id);

-- request_content is written only when the store_content setting is on.
CREATE TABLE request_content (
	id       TEXT PRIMARY KEY REFERENCES requests(id) ON DELETE CASCADE,
	request  TEXT NOT NULL,
	response TEXT NOT NULL
);

CREATE TABLE admin_actions (
	id     TEXT PRIMARY KEY,
	ts     BIGINT NOT NULL,
	actor  TEXT NOT NULL,
	action TEXT NOT NULL,
	target TEXT NOT NULL,
	detail TEXT NOT NULL
);
CREATE INDEX admin_actions_ts ON admin_actions(ts);

-- usage_daily rolls requests up by UTC day, user, team and model; it outlives the
-- audit's retention.
CREATE TABLE usage_daily (
	day           BIGINT NOT NULL,
	user_name     TEXT NOT NULL,
	team          TEXT NOT NULL,
	model         TEXT NOT NULL,
	requests      BIGINT NOT NULL,
	errors        BIGINT NOT NULL,
	input_tokens  BIGINT NOT NULL,
	output_tokens BIGINT NOT NULL,
	cached_tokens BIGINT NOT NULL,
	estimated     BIGINT NOT NULL,
	PRIMARY KEY (day, user_name, team, model)
);
