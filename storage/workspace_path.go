package storage

import (
	"context"
	"database/sql"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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
	ErrPathInvisible    = NewError(Invalid, "path contains an invisible or direction-changing character (a zero-width space or joiner, a bidi override such as U+202E, a blank filler letter, …), which would let one name pass for another; use visible characters only")
)

// invisible reports a character that shows as nothing, or that reorders the text
// around it: format characters (zero-width space, joiners, bidi embeddings,
// overrides and isolates, the byte order mark, tags), line and paragraph
// separators, and the letters that render blank. A name holding one can look
// exactly like another name, or like a different extension ("txt.exe" shown as
// "exe.txt").
func invisible(r rune) bool {
	switch r {
	case '\u115f', '\u1160', '\u3164', '\uffa0', '\u2800':
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// CleanPath turns a workspace path into its canonical form: forward slashes, a leading
// "/", no "." or ".." segments, no repeated or trailing slash; "" and "/" are the root.
// Names are case-sensitive, so "/A" and "/a" are different files, and in Unicode
// normal form C, so that "é" typed as one character or as "e" and a combining accent
// (as macOS file names arrive) is one name, not two that look the same. Invisible and
// direction-changing characters are refused (ErrPathInvisible). A path that would
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
		case invisible(r):
			return "", ErrPathInvisible
		}
	}
	p = norm.NFC.String(p)
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

// normalizeWorkspacePaths brings the paths an older ferry stored to the form
// CleanPath gives now (normal form C, no invisible characters), so that every file
// stays reachable. A path whose new form is already taken by its twin gets " (2)",
// " (3)", … before its extension: both files are kept.
func (db *DB) normalizeWorkspacePaths(ctx context.Context) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, path FROM workspace_files ORDER BY path`)
		if err != nil {
			return err
		}
		type move struct {
			id   int64
			path string
		}
		var moves []move
		for rows.Next() {
			var m move
			if err := rows.Scan(&m.id, &m.path); err != nil {
				rows.Close()
				return err
			}
			if repairPath(m.path) != m.path {
				moves = append(moves, m)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, m := range moves {
			want := repairPath(m.path)
			for n := 2; ; n++ {
				var taken int
				if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM workspace_files WHERE path = ?`, want).Scan(&taken); err != nil {
					return err
				}
				if taken == 0 {
					break
				}
				ext := path.Ext(repairPath(m.path))
				want = strings.TrimSuffix(repairPath(m.path), ext) + fmt.Sprintf(" (%d)", n) + ext
			}
			if _, err := tx.ExecContext(ctx, `UPDATE workspace_files SET path = ? WHERE id = ?`, want, m.id); err != nil {
				return err
			}
		}
		return nil
	})
}

// repairPath is a stored path in today's canonical form, made of whatever it holds:
// invisible characters dropped, each name in normal form C, a name left blank "_".
func repairPath(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, seg := range segs {
		seg = norm.NFC.String(strings.Map(func(r rune) rune {
			if invisible(r) {
				return -1
			}
			return r
		}, seg))
		if strings.TrimSpace(seg) == "" {
			seg = "_"
		}
		segs[i] = seg
	}
	return "/" + strings.Join(segs, "/")
}
