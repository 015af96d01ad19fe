-- The workspace: the agent's own files, kept in the database rather than on disk so
-- that every write is one transaction, several host processes share it safely, and
-- nothing a model writes can reach the user's real file system. Paths are canonical
-- (storage.CleanPath): they start with "/", and folders are implicit in them.
CREATE TABLE workspace_files (
    id          INTEGER PRIMARY KEY,
    path        TEXT    NOT NULL UNIQUE,
    content     BLOB    NOT NULL,
    size        INTEGER NOT NULL CHECK (size >= 0),
    mime        TEXT    NOT NULL,
    is_text     INTEGER NOT NULL CHECK (is_text IN (0, 1)),
    -- version counts writes, so that an undo knows which earlier content comes next.
    version     INTEGER NOT NULL DEFAULT 1,
    created_at  TEXT    NOT NULL,
    modified_at TEXT    NOT NULL
) STRICT;

-- Earlier contents of a file, so that a write can be undone. Only the newest few are
-- kept (setting workspace.versions_kept); deleting the file deletes its history too,
-- because someone who deletes a file expects its bytes gone.
CREATE TABLE workspace_file_versions (
    id          INTEGER PRIMARY KEY,
    file_id     INTEGER NOT NULL REFERENCES workspace_files(id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    content     BLOB    NOT NULL,
    size        INTEGER NOT NULL,
    mime        TEXT    NOT NULL,
    is_text     INTEGER NOT NULL CHECK (is_text IN (0, 1)),
    modified_at TEXT    NOT NULL, -- when this content was written
    replaced_at TEXT    NOT NULL, -- when a later write replaced it
    UNIQUE (file_id, version)
) STRICT;

-- The quota is checked on every write; summing every file's size each time would
-- make writes slower as the workspace grows, so the total is kept by triggers, in the
-- same transaction as the change that moves it.
CREATE TABLE workspace_usage (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    bytes INTEGER NOT NULL
) STRICT;
INSERT INTO workspace_usage(id, bytes) VALUES (1, 0);

CREATE TRIGGER workspace_usage_insert AFTER INSERT ON workspace_files BEGIN
    UPDATE workspace_usage SET bytes = bytes + NEW.size WHERE id = 1;
END;
CREATE TRIGGER workspace_usage_update AFTER UPDATE OF size ON workspace_files BEGIN
    UPDATE workspace_usage SET bytes = bytes - OLD.size + NEW.size WHERE id = 1;
END;
CREATE TRIGGER workspace_usage_delete AFTER DELETE ON workspace_files BEGIN
    UPDATE workspace_usage SET bytes = bytes - OLD.size WHERE id = 1;
END;
