-- The agent's task list, one per conversation. Kept in the database (not in memory as
-- the seed had it) so that a host restart in the middle of a long job loses none.
-- conversation_id has no foreign key yet: conversations arrive with a later migration,
-- and CLI calls use the conversation "default".
CREATE TABLE tasks (
    id              INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: a stale id must not hit a newer task
    conversation_id TEXT    NOT NULL,
    ordinal         INTEGER NOT NULL, -- position in the conversation's list
    subject         TEXT    NOT NULL CHECK (subject <> ''),
    description     TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'in_progress', 'completed')),
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    -- also the index that lists a conversation's tasks in order
    UNIQUE (conversation_id, ordinal)
) STRICT;
