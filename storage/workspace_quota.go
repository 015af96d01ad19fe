package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Settings the workspace reads from the settings table inside each write transaction,
// so that `ferry config set` takes effect at once in every host process sharing the
// database. host/workspace registers them with their descriptions and checks.
const (
	SettingWorkspaceQuota         = "workspace.quota_bytes"
	SettingWorkspaceVersionsKept  = "workspace.versions_kept"
	SettingWorkspacePruneWhenFull = "workspace.prune_when_full"

	DefaultWorkspaceQuota        int64 = 100 << 20
	DefaultWorkspaceVersionsKept       = 5
	// MaxWorkspaceVersionsKept bounds the history: each kept version is a full copy.
	MaxWorkspaceVersionsKept = 100
)

// Usage is what the workspace keeps, the figure its quota limits: the current
// content of every file and the earlier versions kept for undo (each a full copy).
type Usage struct {
	Files    int64
	Versions int64
}

// Total is what the quota counts.
func (u Usage) Total() int64 { return u.Files + u.Versions }

// writeState is what a write needs to know before it changes anything, read inside
// its transaction so that the checks hold when it commits.
type writeState struct {
	quota      int64
	keep       int
	prune      bool // drop the oldest versions to make room (workspace.prune_when_full)
	usage      Usage
	isFolder   bool   // files exist under the path
	parentFile string // an ancestor of the path that is a file, if any
	// the file at the path, when exists
	exists  bool
	id      int64
	size    int64
	version int64
	created string
}

// The settings, usage, folder and parent checks and the current row in one
// statement: a write's cost is mostly per statement (parse, step, driver round trip),
// and this keeps a write at four (begin, this, change, commit).
const writeStateQuery = `SELECT
	(SELECT value FROM settings WHERE key = ?1),
	(SELECT value FROM settings WHERE key = ?2),
	(SELECT value FROM settings WHERE key = ?7),
	u.bytes, u.version_bytes,
	EXISTS (SELECT 1 FROM workspace_files WHERE path > ?3 AND path < ?4),
	(SELECT path FROM workspace_files WHERE path IN (SELECT value FROM json_each(?5)) LIMIT 1),
	f.id, f.size, f.version, f.created_at
FROM workspace_usage u LEFT JOIN workspace_files f ON f.path = ?6 WHERE u.id = 1`

func (db *DB) writeState(ctx context.Context, tx *sql.Tx, p string) (writeState, error) {
	st := writeState{quota: DefaultWorkspaceQuota, keep: DefaultWorkspaceVersionsKept, prune: true}
	lo, hi := pathRange(p)
	parents := []string{}
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		parents = append(parents, dir)
	}
	parentsJSON, _ := json.Marshal(parents)
	var quota, keep, prune, parent, created sql.NullString
	var id, size, version sql.NullInt64
	q, err := db.stmt(ctx, tx, writeStateQuery)
	if err != nil {
		return st, err
	}
	err = q.QueryRowContext(ctx, SettingWorkspaceQuota, SettingWorkspaceVersionsKept, lo, hi, string(parentsJSON), p, SettingWorkspacePruneWhenFull).
		Scan(&quota, &keep, &prune, &st.usage.Files, &st.usage.Versions, &st.isFolder, &parent, &id, &size, &version, &created)
	if err != nil {
		return st, fmt.Errorf("reading workspace state: %w", err)
	}
	st.parentFile = parent.String
	st.exists, st.id, st.size, st.version, st.created = id.Valid, id.Int64, size.Int64, version.Int64, created.String
	// An invalid stored value can only come from around `ferry config set`'s check;
	// refusing says so, where silently using the default would hide it.
	if quota.Valid {
		n, err := strconv.ParseInt(strings.TrimSpace(quota.String), 10, 64)
		if err != nil || n <= 0 {
			return st, badSetting(SettingWorkspaceQuota, quota.String)
		}
		st.quota = n
	}
	if keep.Valid {
		n, err := strconv.Atoi(strings.TrimSpace(keep.String))
		if err != nil || n < 0 || n > MaxWorkspaceVersionsKept {
			return st, badSetting(SettingWorkspaceVersionsKept, keep.String)
		}
		st.keep = n
	}
	if prune.Valid {
		b, err := strconv.ParseBool(strings.TrimSpace(prune.String))
		if err != nil {
			return st, badSetting(SettingWorkspacePruneWhenFull, prune.String)
		}
		st.prune = b
	}
	return st, nil
}

func badSetting(key, value string) error {
	return fmt.Errorf("%w: %s = %q; fix it with `ferry config set %s VALUE` (see `ferry config list`)", ErrBadWorkspaceSetting, key, value, key)
}

// checkPlace refuses a file path that is already a folder, or whose parent is a file.
func (st writeState) checkPlace(p string) error {
	if st.isFolder {
		return fmt.Errorf("%s: %w", p, ErrIsFolder)
	}
	if st.parentFile != "" {
		return fmt.Errorf("%s: %w (%s is a file)", p, ErrParentIsFile, st.parentFile)
	}
	return nil
}

// Pruned is what a write dropped to stay within the quota: the oldest versions
// kept for undo, of any file.
type Pruned struct {
	Versions int
	Bytes    int64
}

// settleQuota runs inside a write's transaction after the change: the write may
// keep the workspace within its quota, or not grow it (so that a lowered quota
// never blocks cleaning up). Otherwise the oldest versions are dropped to make room
// when workspace.prune_when_full allows, and failing that the write is refused (the
// caller rolls back, so nothing changed). bound is an upper bound of the usage after
// the change, computed without a query: a write far from the quota costs nothing more.
func (db *DB) settleQuota(ctx context.Context, tx *sql.Tx, st writeState, p string, size, bound int64) (Pruned, error) {
	before := st.usage.Total()
	if bound <= st.quota || bound <= before {
		return Pruned{}, nil
	}
	var u Usage
	if err := tx.QueryRowContext(ctx, `SELECT bytes, version_bytes FROM workspace_usage WHERE id = 1`).Scan(&u.Files, &u.Versions); err != nil {
		return Pruned{}, fmt.Errorf("reading workspace usage: %w", err)
	}
	limit := max(st.quota, before)
	if u.Total() <= limit {
		return Pruned{}, nil
	}
	var pr Pruned
	if st.prune && u.Versions > 0 {
		// The shortest run of oldest versions whose sizes cover what is over.
		rows, err := tx.QueryContext(ctx, `DELETE FROM workspace_file_versions WHERE id IN (
			SELECT id FROM (SELECT id, size, SUM(size) OVER (ORDER BY replaced_at, id) AS run FROM workspace_file_versions)
			WHERE run - size < ?) RETURNING size`, u.Total()-limit)
		if err != nil {
			return Pruned{}, err
		}
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return Pruned{}, err
			}
			pr.Versions++
			pr.Bytes += n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return Pruned{}, err
		}
		u.Versions -= pr.Bytes
		if u.Total() <= limit {
			return pr, nil
		}
	}
	return Pruned{}, st.quotaError(p, size, u)
}

// quotaError says what holds the space and every way to free it.
func (st writeState) quotaError(p string, size int64, u Usage) error {
	if st.prune {
		return fmt.Errorf("%w: writing %s (%d bytes) would bring the workspace to %d bytes, over its quota of %d bytes (%s) even with every earlier version dropped; free space by deleting files (opfs_delete), or raise the quota",
			ErrQuotaExceeded, p, size, u.Total(), st.quota, SettingWorkspaceQuota)
	}
	return fmt.Errorf("%w: writing %s (%d bytes) would bring the workspace to %d bytes (%d in files, %d in earlier versions kept for undo), over its quota of %d bytes (%s); free space by deleting files (opfs_delete), keeping fewer versions (%s), letting the oldest versions be dropped when the workspace is full (`ferry config set %s true`), or raise the quota",
		ErrQuotaExceeded, p, size, u.Total(), u.Files, u.Versions, st.quota, SettingWorkspaceQuota, SettingWorkspaceVersionsKept, SettingWorkspacePruneWhenFull)
}

// WorkspaceUsage is what the workspace keeps, versions included: the figure the quota
// limits.
func (db *DB) WorkspaceUsage(ctx context.Context) (Usage, error) {
	var u Usage
	if err := db.sql.QueryRowContext(ctx, `SELECT bytes, version_bytes FROM workspace_usage WHERE id = 1`).Scan(&u.Files, &u.Versions); err != nil {
		return Usage{}, fmt.Errorf("reading workspace usage: %w", err)
	}
	return u, nil
}
