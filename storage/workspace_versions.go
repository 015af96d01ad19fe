package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// keepVersion copies the file's current content into its history before it is
// replaced.
func keepVersion(ctx context.Context, tx *sql.Tx, id int64, now string, keep int) error {
	if keep == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO workspace_file_versions(file_id, version, content, size, mime, is_text, modified_at, replaced_at, provenance)
		SELECT id, version, content, size, mime, is_text, modified_at, ?, provenance FROM workspace_files WHERE id = ?`, now, id)
	return err
}

// pruneVersions keeps the newest keep versions below current.
func pruneVersions(ctx context.Context, tx *sql.Tx, id, current int64, keep int) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM workspace_file_versions WHERE file_id = ? AND
		version NOT IN (SELECT version FROM workspace_file_versions WHERE file_id = ? AND version < ? ORDER BY version DESC LIMIT ?)`,
		id, id, current, keep)
	return err
}

// Versions lists the kept earlier contents of the file at path, newest first.
func (db *DB) Versions(ctx context.Context, p string) ([]Version, error) {
	fi, err := db.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT v.version, v.size, v.mime, v.is_text, v.modified_at, v.replaced_at
		FROM workspace_file_versions v JOIN workspace_files f ON f.id = v.file_id
		WHERE f.path = ? ORDER BY v.version DESC`, fi.Path)
	if err != nil {
		return nil, fmt.Errorf("listing versions of %s: %w", fi.Path, err)
	}
	defer rows.Close()
	out := []Version{}
	for rows.Next() {
		var v Version
		var modified, replaced string
		if err := rows.Scan(&v.Version, &v.Size, &v.MIME, &v.IsText, &modified, &replaced); err != nil {
			return nil, err
		}
		v.ModifiedAt, v.ReplacedAt = parseTime(modified), parseTime(replaced)
		out = append(out, v)
	}
	return out, rows.Err()
}

// Undo takes the file at path one write back: its newest kept version becomes its
// content again and leaves the history, so repeated undos walk further back. What
// the undo replaces is discarded (there is no redo). A file with no kept version
// (written once, or with workspace.versions_kept at 0) gives ErrNoVersions.
func (db *DB) Undo(ctx context.Context, p string) (FileInfo, error) {
	return db.goBack(ctx, p, 0, false)
}

// Restore makes kept version of the file at path its content again. Unlike Undo it
// is itself a write: the content it replaces becomes a new version, so a restore can
// be undone.
func (db *DB) Restore(ctx context.Context, p string, version int64) (FileInfo, error) {
	return db.goBack(ctx, p, version, true)
}

func (db *DB) goBack(ctx context.Context, p string, version int64, asWrite bool) (FileInfo, error) {
	cp, err := cleanFilePath(p)
	if err != nil {
		return FileInfo{}, err
	}
	var info FileInfo
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := db.writeState(ctx, tx, cp)
		if err != nil {
			return err
		}
		if !st.exists {
			return ErrFileNotFound
		}
		id := st.id
		q := `SELECT id, version, size, mime, is_text, provenance FROM workspace_file_versions WHERE file_id = ? ORDER BY version DESC LIMIT 1`
		args := []any{id}
		if asWrite {
			q = `SELECT id, version, size, mime, is_text, provenance FROM workspace_file_versions WHERE file_id = ? AND version = ?`
			args = append(args, version)
		}
		var vid int64
		info = FileInfo{Path: cp, CreatedAt: parseTime(st.created)}
		err = tx.QueryRowContext(ctx, q, args...).Scan(&vid, &info.Version, &info.Size, &info.MIME, &info.IsText, &info.Provenance)
		if errors.Is(err, sql.ErrNoRows) {
			if asWrite {
				return fmt.Errorf("%w: %d (see the kept versions first)", ErrNoSuchVersion, version)
			}
			return ErrNoVersions
		}
		if err != nil {
			return err
		}
		now := db.now()
		info.ModifiedAt = parseTime(now)
		if asWrite {
			if err := keepVersion(ctx, tx, id, now, st.keep); err != nil {
				return err
			}
			info.Version = st.version + 1
		}
		if _, err := tx.ExecContext(ctx, `UPDATE workspace_files SET
			(content, size, mime, is_text, provenance) = (SELECT content, size, mime, is_text, provenance FROM workspace_file_versions WHERE id = ?),
			version = ?, modified_at = ? WHERE id = ?`, vid, info.Version, now, id); err != nil {
			return err
		}
		if !asWrite {
			// An undo only ever shrinks the workspace: the replaced content goes.
			_, err := tx.ExecContext(ctx, `DELETE FROM workspace_file_versions WHERE id = ?`, vid)
			return err
		}
		if err := pruneVersions(ctx, tx, id, info.Version, st.keep); err != nil {
			return err
		}
		bound := st.usage.Total() + info.Size
		if st.keep == 0 {
			bound -= st.size
		}
		info.Pruned, err = db.settleQuota(ctx, tx, st, cp, info.Size, bound)
		return err
	})
	if err != nil {
		verb := "undoing the last write to"
		if asWrite {
			verb = "restoring"
		}
		return FileInfo{}, fmt.Errorf("%s %s: %w", verb, cp, err)
	}
	if !asWrite {
		db.purge(ctx) // what the undo replaced is gone
	}
	return info, nil
}
