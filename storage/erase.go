package storage

import (
	"context"
	"errors"
	"fmt"
)

// Deleted content leaves no trace in the files: someone who deletes a secret, a
// file or a conversation expects it gone, not waiting in free pages for `strings
// ferry.db`.
//
// Every connection runs with secure_delete, so what a DELETE or an UPDATE frees is
// overwritten with zeros. In WAL mode those zeroed pages go to the write-ahead log
// first: until a checkpoint copies them over, the database file still holds the old
// bytes, and the log keeps the frames that carried them until it is reset and
// overwritten. So after a deletion a person asked for, Purge checkpoints and empties
// the log, and both files are clean when the call returns. (Content a write replaces
// in passing, like a workspace version dropped past workspace.versions_kept, is
// zeroed in the log at once and in the database file at SQLite's next automatic
// checkpoint.)

// Purge copies every page of the write-ahead log into the database file and empties
// the log. It waits (busy_timeout) for other processes' readers to finish; one still
// reading after that keeps the log, and ErrPurgeBusy says so: the next purge, or
// SQLite's own checkpoint, finishes the job.
func (db *DB) Purge(ctx context.Context) error {
	var busy, frames, done int
	if err := db.sql.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
		return fmt.Errorf("checkpointing %s: %w", db.path, err)
	}
	if busy != 0 {
		return ErrPurgeBusy
	}
	return nil
}

// ErrPurgeBusy means another process was reading the database, so its write-ahead
// log could not be emptied yet.
var ErrPurgeBusy = errors.New("another process is reading the database; its log is emptied at the next checkpoint")

// purge is Purge after a deletion that already succeeded: a busy log is not the
// caller's failure.
func (db *DB) purge(ctx context.Context) {
	_ = db.Purge(ctx)
}

// scrubFreePages cleans, once, the free pages of a database written before
// secure_delete was on, which may hold deleted content: one VACUUM rewrites the file
// without them. A fresh or compact database has no free pages and costs nothing.
func (db *DB) scrubFreePages(ctx context.Context) error {
	var free int
	if err := db.sql.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
		return err
	}
	if free == 0 {
		return nil
	}
	if _, err := db.sql.ExecContext(ctx, `VACUUM`); err != nil {
		return errUpkeepLater
	}
	db.purge(ctx)
	return nil
}
