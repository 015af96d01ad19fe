package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
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

// FileInfo describes a workspace file without its content.
type FileInfo struct {
	Path       string
	Size       int64
	MIME       string
	IsText     bool // valid UTF-8 without NUL bytes
	Version    int64
	CreatedAt  time.Time
	ModifiedAt time.Time
	// Provenance is who wrote this content and what their context held, as the
	// writer gave it (the host's data-flow labels); "" when nobody said.
	Provenance string
	// Pruned is what a write dropped to stay within the quota (writes only).
	Pruned Pruned
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

// WriteFile stores content at path, replacing any earlier content (which is kept as a
// version, within workspace.versions_kept). An empty mimeType is detected from the
// name and content. The whole write is one transaction: the quota is checked against
// the usage as it is when the write commits, and a refused write leaves the old
// content as it was.
func (db *DB) WriteFile(ctx context.Context, p string, content []byte, mimeType string) (FileInfo, error) {
	return db.WriteFileAs(ctx, p, content, mimeType, "")
}

// WriteFileAs is WriteFile keeping provenance with the content (and, when it is
// replaced, with its version).
func (db *DB) WriteFileAs(ctx context.Context, p string, content []byte, mimeType, provenance string) (FileInfo, error) {
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
	info := FileInfo{Path: cp, Size: int64(len(content)), MIME: mimeType, IsText: isText, Provenance: provenance}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := db.writeState(ctx, tx, cp)
		if err != nil {
			return err
		}
		if err := st.checkPlace(cp); err != nil {
			return err
		}
		now := db.now()
		bound := st.usage.Total() + info.Size
		if !st.exists {
			info.Version = 1
			ins, err := db.stmt(ctx, tx, insertFileQuery)
			if err != nil {
				return err
			}
			if _, err = ins.ExecContext(ctx, cp, content, info.Size, mimeType, isText, now, now, provenance); err != nil {
				return err
			}
			info.CreatedAt, info.ModifiedAt = parseTime(now), parseTime(now)
		} else {
			if err := keepVersion(ctx, tx, st.id, now, st.keep); err != nil {
				return err
			}
			if st.keep == 0 {
				bound -= st.size // the old content is not kept
			}
			info.Version = st.version + 1
			if _, err := tx.ExecContext(ctx, `UPDATE workspace_files SET content = ?, size = ?, mime = ?, is_text = ?, version = ?, modified_at = ?, provenance = ?
			WHERE id = ?`, content, info.Size, mimeType, isText, info.Version, now, provenance, st.id); err != nil {
				return err
			}
			info.CreatedAt, info.ModifiedAt = parseTime(st.created), parseTime(now)
			if err := pruneVersions(ctx, tx, st.id, info.Version, st.keep); err != nil {
				return err
			}
		}
		info.Pruned, err = db.settleQuota(ctx, tx, st, cp, info.Size, bound)
		return err
	})
	if err != nil {
		return FileInfo{}, fmt.Errorf("writing %s: %w", cp, err)
	}
	return info, nil
}

const (
	fileColumns     = `path, size, mime, is_text, version, created_at, modified_at, provenance`
	readFileQuery   = `SELECT ` + fileColumns + `, content FROM workspace_files WHERE path = ?`
	insertFileQuery = `INSERT INTO workspace_files(path, content, size, mime, is_text, version, created_at, modified_at, provenance)
		VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)`
)

func scanInfo(s rowScanner, extra ...any) (FileInfo, error) {
	var fi FileInfo
	var created, modified string
	if err := s.Scan(append([]any{&fi.Path, &fi.Size, &fi.MIME, &fi.IsText, &fi.Version, &created, &modified, &fi.Provenance}, extra...)...); err != nil {
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
	db.purge(ctx)
	slices.SortFunc(removed, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return removed, nil
}
