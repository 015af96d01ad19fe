package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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

// Path limits. They are generous for real names and keep a hostile caller from
// making every lookup and listing handle megabyte-long keys.
const (
	MaxPathBytes    = 1024
	MaxSegmentBytes = 255
)

// Path refusals. Each says what was wrong and what to do instead, because the model
// reads them and should be able to correct its call.
var (
	ErrPathEscapes      = NewError(Invalid, `".." climbs above the workspace root; paths are relative to the root and cannot leave it`)
	ErrPathNUL          = NewError(Invalid, "path contains a NUL byte, which no file name may hold")
	ErrPathControl      = NewError(Invalid, "path contains a control character (newline, tab, escape, …); use printable characters only")
	ErrPathBackslash    = NewError(Invalid, `path contains a backslash: separate folders with "/" (a backslash separates folders on Windows but is an ordinary character elsewhere, so the path would mean different things on different systems)`)
	ErrPathNotUTF8      = NewError(Invalid, "path is not valid UTF-8")
	ErrPathTooLong      = NewError(Invalid, "path is longer than %d bytes; use shorter folder or file names", MaxPathBytes)
	ErrSegmentTooLong   = NewError(Invalid, "a file or folder name in the path is longer than %d bytes; shorten it", MaxSegmentBytes)
	ErrPathEmptySegment = NewError(Invalid, "path has a file or folder name made only of spaces; give it a visible name")
	ErrPathIsRoot       = NewError(Invalid, `path names the workspace root ("/"), not a file; give a file path such as "/notes.txt"`)
)

// Workspace state refusals.
var (
	ErrFileNotFound        = NewError(NotFound, "no such file or folder in the workspace")
	ErrIsFolder            = NewError(Conflict, "path is a folder (files exist under it); choose another name or delete the folder first")
	ErrParentIsFile        = NewError(Conflict, "a parent of the path is a file, so it cannot also be a folder; choose another path or delete that file first")
	ErrNotFolder           = NewError(Conflict, "path is a file, not a folder")
	ErrQuotaExceeded       = NewError(Quota, "workspace quota exceeded")
	ErrNoVersions          = NewError(Conflict, "no earlier version to go back to")
	ErrNoSuchVersion       = NewError(NotFound, "no such version of the file")
	ErrBadWorkspaceSetting = NewError(Conflict, "a workspace setting holds an invalid value")
)

// CleanPath turns a workspace path into its canonical form: forward slashes, a leading
// "/", no "." or ".." segments, no repeated or trailing slash; "" and "/" are the root.
// Names are case-sensitive, so "/A" and "/a" are different files. A path that would
// climb above the root (even in the middle: "a/../../b") is refused rather than
// clamped, because silently writing somewhere other than where the caller asked is
// worse than an error.
func CleanPath(p string) (string, error) {
	if len(p) > MaxPathBytes {
		return "", ErrPathTooLong
	}
	if !utf8.ValidString(p) {
		return "", ErrPathNotUTF8
	}
	for _, r := range p {
		switch {
		case r == 0:
			return "", ErrPathNUL
		case r == '\\':
			return "", ErrPathBackslash
		case unicode.IsControl(r):
			return "", ErrPathControl
		}
	}
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "" || seg == ".":
		case seg == "..":
			if len(segs) == 0 {
				return "", ErrPathEscapes
			}
			segs = segs[:len(segs)-1]
		case strings.TrimSpace(seg) == "":
			return "", ErrPathEmptySegment
		case len(seg) > MaxSegmentBytes:
			return "", ErrSegmentTooLong
		default:
			segs = append(segs, seg)
		}
	}
	out := "/" + strings.Join(segs, "/")
	if len(out) > MaxPathBytes {
		return "", ErrPathTooLong
	}
	return out, nil
}

func cleanFilePath(p string) (string, error) {
	c, err := CleanPath(p)
	if err != nil {
		return "", fmt.Errorf("workspace path %q: %w", p, err)
	}
	if c == "/" {
		return "", fmt.Errorf("workspace path %q: %w", p, ErrPathIsRoot)
	}
	return c, nil
}

// pathRange returns the bounds of every path below folder dir (canonical), for a range
// scan on the path index: "/a/" < every "/a/…" < "/a0", since "0" follows "/" in
// byte order and SQLite compares TEXT bytewise.
func pathRange(dir string) (lo, hi string) {
	if dir == "/" {
		return "/", "0"
	}
	return dir + "/", dir + "0"
}

// FileInfo describes a workspace file without its content.
type FileInfo struct {
	Path       string
	Size       int64
	MIME       string
	IsText     bool // valid UTF-8 without NUL bytes
	Version    int64
	CreatedAt  time.Time
	ModifiedAt time.Time
}

// File is a workspace file with its content.
type File struct {
	FileInfo
	Content []byte
}

// Entry is one immediate child of a folder.
type Entry struct {
	Name string
	Type string // "file" or "dir"
	// Size is the file's size, or for a folder the total of every file under it.
	Size int64
	// Modified is the file's modification time, or for a folder the newest under it.
	Modified time.Time
}

// Version is an earlier content of a file, kept so that a write can be undone.
type Version struct {
	Version    int64
	Size       int64
	MIME       string
	IsText     bool
	ModifiedAt time.Time // when this content was written
	ReplacedAt time.Time // when a later write replaced it
}

// IsText reports whether content counts as text: valid UTF-8 with no NUL byte (a NUL
// is valid UTF-8 but marks binary formats, and breaks many text consumers).
func IsText(content []byte) bool {
	return utf8.Valid(content) && !strings.ContainsRune(string(content), 0)
}

// DetectMIME guesses a MIME type from the name's extension, then from the content.
func DetectMIME(name string, content []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	if IsText(content) {
		return "text/plain; charset=utf-8"
	}
	return http.DetectContentType(content)
}

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

// WriteFile stores content at path, replacing any earlier content (which is kept as a
// version, within workspace.versions_kept). An empty mimeType is detected from the
// name and content. The whole write is one transaction: the quota is checked against
// the usage as it is when the write commits, and a refused write leaves the old
// content as it was.
func (db *DB) WriteFile(ctx context.Context, p string, content []byte, mimeType string) (FileInfo, error) {
	cp, err := cleanFilePath(p)
	if err != nil {
		return FileInfo{}, err
	}
	if content == nil {
		content = []byte{} // a nil slice would be stored as NULL
	}
	isText := IsText(content)
	if mimeType == "" {
		mimeType = DetectMIME(cp, content)
	}
	info := FileInfo{Path: cp, Size: int64(len(content)), MIME: mimeType, IsText: isText}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := db.writeState(ctx, tx, cp)
		if err != nil {
			return err
		}
		if err := st.checkPlace(cp); err != nil {
			return err
		}
		if err := st.checkQuota(cp, info.Size); err != nil {
			return err
		}
		now := db.now()
		if !st.exists {
			info.Version = 1
			ins, err := db.stmt(ctx, tx, insertFileQuery)
			if err != nil {
				return err
			}
			_, err = ins.ExecContext(ctx, cp, content, info.Size, mimeType, isText, now, now)
			info.CreatedAt, info.ModifiedAt = parseTime(now), parseTime(now)
			return err
		}
		if err := keepVersion(ctx, tx, st.id, now, st.keep); err != nil {
			return err
		}
		info.Version = st.version + 1
		if _, err := tx.ExecContext(ctx, `UPDATE workspace_files SET content = ?, size = ?, mime = ?, is_text = ?, version = ?, modified_at = ?
			WHERE id = ?`, content, info.Size, mimeType, isText, info.Version, now, st.id); err != nil {
			return err
		}
		info.CreatedAt, info.ModifiedAt = parseTime(st.created), parseTime(now)
		return pruneVersions(ctx, tx, st.id, info.Version, st.keep)
	})
	if err != nil {
		return FileInfo{}, fmt.Errorf("writing %s: %w", cp, err)
	}
	return info, nil
}

// keepVersion copies the file's current content into its history before it is
// replaced.
func keepVersion(ctx context.Context, tx *sql.Tx, id int64, now string, keep int) error {
	if keep == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO workspace_file_versions(file_id, version, content, size, mime, is_text, modified_at, replaced_at)
		SELECT id, version, content, size, mime, is_text, modified_at, ? FROM workspace_files WHERE id = ?`, now, id)
	return err
}

// pruneVersions keeps the newest keep versions below current.
func pruneVersions(ctx context.Context, tx *sql.Tx, id, current int64, keep int) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM workspace_file_versions WHERE file_id = ? AND
		version NOT IN (SELECT version FROM workspace_file_versions WHERE file_id = ? AND version < ? ORDER BY version DESC LIMIT ?)`,
		id, id, current, keep)
	return err
}

// writeTx runs fn in one transaction. The database opens with _txlock=immediate, so
// BEGIN already holds the write lock: what fn reads (usage, the quota, whether a path
// is free) cannot change under it before it commits, even from another process.
func (db *DB) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

const (
	fileColumns     = `path, size, mime, is_text, version, created_at, modified_at`
	readFileQuery   = `SELECT ` + fileColumns + `, content FROM workspace_files WHERE path = ?`
	insertFileQuery = `INSERT INTO workspace_files(path, content, size, mime, is_text, version, created_at, modified_at)
		VALUES (?, ?, ?, ?, ?, 1, ?, ?)`
)

// stmt returns query prepared once per database, bound to tx when tx is not nil.
// Parsing the SQL was a third of a workspace write's CPU time; a *sql.Stmt keeps one
// prepared statement per pooled connection, and DB.Close releases them all.
func (db *DB) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	v, ok := db.stmts.Load(query)
	if !ok {
		s, err := db.sql.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		if v, ok = db.stmts.LoadOrStore(query, s); ok {
			s.Close()
		} else {
			v = s
		}
	}
	if tx != nil {
		return tx.StmtContext(ctx, v.(*sql.Stmt)), nil
	}
	return v.(*sql.Stmt), nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanInfo(s rowScanner, extra ...any) (FileInfo, error) {
	var fi FileInfo
	var created, modified string
	if err := s.Scan(append([]any{&fi.Path, &fi.Size, &fi.MIME, &fi.IsText, &fi.Version, &created, &modified}, extra...)...); err != nil {
		return fi, err
	}
	fi.CreatedAt, fi.ModifiedAt = parseTime(created), parseTime(modified)
	return fi, nil
}

// ReadFile returns the file at path with its content.
func (db *DB) ReadFile(ctx context.Context, p string) (File, error) {
	cp, err := cleanFilePath(p)
	if err != nil {
		return File{}, err
	}
	q, err := db.stmt(ctx, nil, readFileQuery)
	if err != nil {
		return File{}, fmt.Errorf("reading %s: %w", cp, err)
	}
	var f File
	f.FileInfo, err = scanInfo(q.QueryRowContext(ctx, cp), &f.Content)
	if err != nil {
		return File{}, db.missing(ctx, cp, err)
	}
	if f.Content == nil {
		f.Content = []byte{} // an empty file is not an absent one
	}
	return f, nil
}

// Stat describes the file at path without reading its content.
func (db *DB) Stat(ctx context.Context, p string) (FileInfo, error) {
	cp, err := cleanFilePath(p)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := scanInfo(db.sql.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM workspace_files WHERE path = ?`, cp))
	if err != nil {
		return FileInfo{}, db.missing(ctx, cp, err)
	}
	return fi, nil
}

// missing explains a failed lookup of file cp: a folder, or nothing at all.
func (db *DB) missing(ctx context.Context, cp string, err error) error {
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reading %s: %w", cp, err)
	}
	lo, hi := pathRange(cp)
	var one int
	if db.sql.QueryRowContext(ctx, `SELECT 1 FROM workspace_files WHERE path > ? AND path < ? LIMIT 1`, lo, hi).Scan(&one) == nil {
		return fmt.Errorf("%s is a folder, not a file; list it instead: %w", cp, ErrIsFolder)
	}
	return fmt.Errorf("%s: %w", cp, ErrFileNotFound)
}

// List returns the immediate children of folder dir ("" or "/" for the root), files
// and folders alike, sorted by name. Folders exist only through the files under them.
// Listing an empty workspace's root gives no entries; listing a folder that does not
// exist is ErrFileNotFound.
func (db *DB) List(ctx context.Context, dir string) ([]Entry, error) {
	cp, err := CleanPath(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace path %q: %w", dir, err)
	}
	lo, hi := pathRange(cp)
	rows, err := db.sql.QueryContext(ctx, `SELECT path, size, modified_at FROM workspace_files WHERE path > ? AND path < ? ORDER BY path`, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", cp, err)
	}
	defer rows.Close()
	var out []Entry
	index := map[string]int{}
	for rows.Next() {
		var p, modified string
		var size int64
		if err := rows.Scan(&p, &size, &modified); err != nil {
			return nil, err
		}
		name, _, isDir := strings.Cut(p[len(lo):], "/")
		typ := "file"
		if isDir {
			typ = "dir"
		}
		m := parseTime(modified)
		if i, ok := index[name]; ok {
			// A name can only repeat as a folder: files' paths are unique, and a
			// file and a folder of one name cannot coexist (WriteFile refuses it).
			out[i].Size += size
			if m.After(out[i].Modified) {
				out[i].Modified = m
			}
			continue
		}
		index[name] = len(out)
		out = append(out, Entry{Name: name, Type: typ, Size: size, Modified: m})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 && cp != "/" {
		if _, err := db.Stat(ctx, cp); err == nil {
			return nil, fmt.Errorf("%s: %w; read it instead", cp, ErrNotFolder)
		}
		return nil, fmt.Errorf("%s: %w", cp, ErrFileNotFound)
	}
	if out == nil {
		out = []Entry{}
	}
	// Rows come in path order, where "/a.b" sorts before "/a/x"; names sort "a" first.
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Delete removes the file at path, or the folder at path with everything under it,
// in one transaction, and returns what was removed (with each file's history).
// Deleting the root is refused: emptying the whole workspace should be a deliberate
// act of a person, not a slip in a model's path.
func (db *DB) Delete(ctx context.Context, p string) ([]FileInfo, error) {
	cp, err := cleanFilePath(p)
	if err != nil {
		return nil, err
	}
	lo, hi := pathRange(cp)
	var removed []FileInfo
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `DELETE FROM workspace_files WHERE path = ? OR (path > ? AND path < ?)
			RETURNING `+fileColumns, cp, lo, hi)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			fi, err := scanInfo(rows)
			if err != nil {
				return err
			}
			removed = append(removed, fi)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(removed) == 0 {
			return ErrFileNotFound
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deleting %s: %w", cp, err)
	}
	slices.SortFunc(removed, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return removed, nil
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
		q := `SELECT id, version, size, mime, is_text FROM workspace_file_versions WHERE file_id = ? ORDER BY version DESC LIMIT 1`
		args := []any{id}
		if asWrite {
			q = `SELECT id, version, size, mime, is_text FROM workspace_file_versions WHERE file_id = ? AND version = ?`
			args = append(args, version)
		}
		var vid int64
		info = FileInfo{Path: cp, CreatedAt: parseTime(st.created)}
		err = tx.QueryRowContext(ctx, q, args...).Scan(&vid, &info.Version, &info.Size, &info.MIME, &info.IsText)
		if errors.Is(err, sql.ErrNoRows) {
			if asWrite {
				return fmt.Errorf("%w: %d (see the kept versions first)", ErrNoSuchVersion, version)
			}
			return ErrNoVersions
		}
		if err != nil {
			return err
		}
		if err := st.checkQuota(cp, info.Size); err != nil {
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
			(content, size, mime, is_text) = (SELECT content, size, mime, is_text FROM workspace_file_versions WHERE id = ?),
			version = ?, modified_at = ? WHERE id = ?`, vid, info.Version, now, id); err != nil {
			return err
		}
		if !asWrite {
			_, err := tx.ExecContext(ctx, `DELETE FROM workspace_file_versions WHERE id = ?`, vid)
			return err
		}
		return pruneVersions(ctx, tx, id, info.Version, st.keep)
	})
	if err != nil {
		verb := "undoing the last write to"
		if asWrite {
			verb = "restoring"
		}
		return FileInfo{}, fmt.Errorf("%s %s: %w", verb, cp, err)
	}
	return info, nil
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
