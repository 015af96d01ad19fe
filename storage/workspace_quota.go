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
	SettingWorkspaceQuota        = "workspace.quota_bytes"
	SettingWorkspaceVersionsKept = "workspace.versions_kept"

	DefaultWorkspaceQuota        int64 = 100 << 20
	DefaultWorkspaceVersionsKept       = 5
	// MaxWorkspaceVersionsKept bounds the history: each kept version is a full copy.
	MaxWorkspaceVersionsKept = 100
)

// writeState is what a write needs to know before it changes anything, read inside
// its transaction so that the checks hold when it commits.
type writeState struct {
	quota      int64
	keep       int
	used       int64  // bytes of current files (workspace_usage)
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
	(SELECT bytes FROM workspace_usage WHERE id = 1),
	EXISTS (SELECT 1 FROM workspace_files WHERE path > ?3 AND path < ?4),
	(SELECT path FROM workspace_files WHERE path IN (SELECT value FROM json_each(?5)) LIMIT 1),
	f.id, f.size, f.version, f.created_at
FROM (SELECT 1) LEFT JOIN workspace_files f ON f.path = ?6`

func (db *DB) writeState(ctx context.Context, tx *sql.Tx, p string) (writeState, error) {
	st := writeState{quota: DefaultWorkspaceQuota, keep: DefaultWorkspaceVersionsKept}
	lo, hi := pathRange(p)
	parents := []string{}
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		parents = append(parents, dir)
	}
	parentsJSON, _ := json.Marshal(parents)
	var quota, keep, parent, created sql.NullString
	var id, size, version sql.NullInt64
	q, err := db.stmt(ctx, tx, writeStateQuery)
	if err != nil {
		return st, err
	}
	err = q.QueryRowContext(ctx, SettingWorkspaceQuota, SettingWorkspaceVersionsKept, lo, hi, string(parentsJSON), p).
		Scan(&quota, &keep, &st.used, &st.isFolder, &parent, &id, &size, &version, &created)
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
	return st, nil
}

func badSetting(key, value string) error {
	return fmt.Errorf("%w: %s = %q; fix it with `ferry config set %s VALUE` (see `ferry config list`)", ErrBadWorkspaceSetting, key, value, key)
}

// checkQuota lets a write through when the workspace stays within its quota, and
// always when it shrinks the file, so that a lowered quota never blocks cleaning up.
func (st writeState) checkQuota(p string, newSize int64) error {
	if after := st.used - st.size + newSize; newSize > st.size && after > st.quota {
		return fmt.Errorf("%w: writing %s (%d bytes) would bring the workspace to %d bytes, over its quota of %d bytes (%s); delete files or raise the quota",
			ErrQuotaExceeded, p, newSize, after, st.quota, SettingWorkspaceQuota)
	}
	return nil
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

// WorkspaceUsage is the total size of the workspace's current files, the figure the
// quota limits. Kept versions do not count: they are bounded by
// workspace.versions_kept per file, and an undo history that made fresh writes fail
// would surprise the person who set the quota.
func (db *DB) WorkspaceUsage(ctx context.Context) (int64, error) {
	var n int64
	if err := db.sql.QueryRowContext(ctx, `SELECT bytes FROM workspace_usage WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading workspace usage: %w", err)
	}
	return n, nil
}
