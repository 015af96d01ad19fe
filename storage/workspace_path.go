package storage

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
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
