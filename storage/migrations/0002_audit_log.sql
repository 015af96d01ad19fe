-- Every tool call that went through the pipeline, executed, denied or failed. Rows are
-- written by one writer goroutine per process in batches; several host processes may
-- append at once. Secret arguments are redacted before they get here, and the result
-- is a bounded summary, so the table never holds what the user would not show.
CREATE TABLE audit_log (
    id           INTEGER PRIMARY KEY,
    time         TEXT    NOT NULL, -- RFC 3339 UTC with nanoseconds: sorts as text
    call_id      TEXT    NOT NULL,
    tool         TEXT    NOT NULL,
    source       TEXT    NOT NULL, -- builtin, page, capability; '' when no tool was found
    origin       TEXT    NOT NULL,
    caller       TEXT    NOT NULL,
    arguments    TEXT    NOT NULL, -- JSON, secrets redacted
    result       TEXT    NOT NULL, -- bounded summary of the result or the reason
    code         TEXT    NOT NULL, -- '' on success, else a code of DESIGN.md's table
    success      INTEGER NOT NULL,
    dangerous    INTEGER NOT NULL,
    trace_id     TEXT    NOT NULL,
    parent_trace TEXT    NOT NULL,
    depth        INTEGER NOT NULL,
    conversation TEXT    NOT NULL,
    run          TEXT    NOT NULL,
    duration_us  INTEGER NOT NULL
) STRICT;

CREATE INDEX audit_log_time   ON audit_log(time);
CREATE INDEX audit_log_tool   ON audit_log(tool, time);
CREATE INDEX audit_log_code   ON audit_log(code, time);
CREATE INDEX audit_log_origin ON audit_log(origin, time);
