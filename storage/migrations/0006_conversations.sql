-- Conversations, their messages, the runs of the agent loop over them, and the
-- diagnostics record of every model call a run made. A conversation's messages are
-- kept whole for the user to read back; what the model is sent starts at the newest
-- summary (see messages.summary_of), so compaction never destroys history.
CREATE TABLE conversations (
    id          TEXT    PRIMARY KEY,
    title       TEXT    NOT NULL DEFAULT '',
    provider_id TEXT    NOT NULL DEFAULT '', -- '' means the default provider
    tab_id      INTEGER NOT NULL DEFAULT 0,  -- the tab the conversation is bound to, 0 none
    origin      TEXT    NOT NULL DEFAULT '', -- that tab's origin when it was bound
    status      TEXT    NOT NULL DEFAULT 'idle'
                CHECK (status IN ('idle', 'running', 'interrupted')),
    created_at  TEXT    NOT NULL,
    updated_at  TEXT    NOT NULL
) STRICT;

CREATE INDEX conversations_updated ON conversations(updated_at);

CREATE TABLE messages (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    ordinal         INTEGER NOT NULL,
    role            TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'summary')),
    content         TEXT    NOT NULL,
    tool_calls      TEXT    NOT NULL DEFAULT '', -- JSON array, assistant turns only
    tool_call_id    TEXT    NOT NULL DEFAULT '', -- tool results only
    images          TEXT    NOT NULL DEFAULT '', -- JSON array of data URLs
    -- A summary row stands for every message up to this ordinal when the history is
    -- sent to the model; 0 on other rows.
    summary_of      INTEGER NOT NULL DEFAULT 0,
    run_id          TEXT    NOT NULL DEFAULT '',
    created_at      TEXT    NOT NULL,
    UNIQUE (conversation_id, ordinal)
) STRICT;

CREATE TABLE runs (
    id              TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_run_id   TEXT    NOT NULL DEFAULT '', -- a sub-agent's run names its parent's
    agent_type      TEXT    NOT NULL DEFAULT '', -- the sub-agent type; '' for the main agent
    status          TEXT    NOT NULL
                    CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'interrupted')),
    error           TEXT    NOT NULL DEFAULT '',
    provider_id     TEXT    NOT NULL DEFAULT '',
    model           TEXT    NOT NULL DEFAULT '',
    started_at      TEXT    NOT NULL,
    finished_at     TEXT    NOT NULL DEFAULT '',
    -- Several host processes share the database: a run is only taken for dead (and
    -- marked interrupted) when its process has stopped refreshing this.
    heartbeat_at    TEXT    NOT NULL,
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    tool_calls      INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX runs_conversation ON runs(conversation_id, started_at);
CREATE INDEX runs_status ON runs(status);

CREATE TABLE model_calls (
    id            INTEGER PRIMARY KEY,
    run_id        TEXT    NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ordinal       INTEGER NOT NULL,
    purpose       TEXT    NOT NULL DEFAULT 'turn', -- turn, or compaction
    provider_id   TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    request       TEXT    NOT NULL, -- JSON as sent: system, messages, tools with schemas, unavailable
    response      TEXT    NOT NULL DEFAULT '', -- JSON: text, tool calls, stop reason
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    latency_ms    INTEGER NOT NULL DEFAULT 0,
    attempts      TEXT    NOT NULL DEFAULT '[]', -- JSON: each HTTP try, retries included
    error         TEXT    NOT NULL DEFAULT '',
    started_at    TEXT    NOT NULL,
    UNIQUE (run_id, ordinal)
) STRICT;

CREATE INDEX model_calls_started ON model_calls(started_at);
