// Package workspace offers the agent's file tools (opfs_write, opfs_read, opfs_list,
// opfs_delete) over the workspace kept in the host's database. The names follow the
// seed, where the files lived in the browser's origin-private file system; here they
// live in SQLite so that every host process shares them and every write is one
// transaction.
package workspace

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

func init() {
	config.Register(config.Setting{
		Key:         storage.SettingWorkspaceQuota,
		Description: "the most bytes the workspace may keep: its files and the earlier versions kept for undo together; a write beyond it first drops the oldest versions (" + storage.SettingWorkspacePruneWhenFull + "), then is refused",
		Default:     strconv.FormatInt(storage.DefaultWorkspaceQuota, 10),
		Validate: func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || n > 1<<40 {
				return fmt.Errorf("must be a whole number of bytes from 1 to %d (1 TiB), like 104857600 for 100 MiB", int64(1)<<40)
			}
			return nil
		},
	})
	config.Register(config.Setting{
		Key:         storage.SettingWorkspaceVersionsKept,
		Description: "how many earlier versions of each workspace file are kept so that a write can be undone (0 keeps none)",
		Default:     strconv.Itoa(storage.DefaultWorkspaceVersionsKept),
		Validate:    config.IntRange(0, storage.MaxWorkspaceVersionsKept),
	})
	config.Register(config.Setting{
		Key:         storage.SettingWorkspacePruneWhenFull,
		Description: "when a write would take the workspace over its quota, drop the oldest earlier versions (of any file) to make room first (true), or refuse the write at once (false)",
		Default:     "true",
		Validate:    config.OneOf("true", "false"),
	})
}

// Store is what the tools need from the database; *storage.DB implements it.
type Store interface {
	WriteFile(ctx context.Context, path string, content []byte, mimeType string) (storage.FileInfo, error)
	ReadFile(ctx context.Context, path string) (storage.File, error)
	List(ctx context.Context, dir string) ([]storage.Entry, error)
	Delete(ctx context.Context, path string) ([]storage.FileInfo, error)
}

// Deps is what the workspace tools need from the host.
type Deps struct {
	Store Store
}

// PageLines is how many lines of a text file opfs_read returns when no offset or
// limit is given: enough for most files, few enough not to flood the model's context.
const PageLines = 200

// WriteResult is opfs_write's result.
type WriteResult struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	MIME    string `json:"mime"`
	Version int64  `json:"version"`
	Created bool   `json:"created"`
	// What the write dropped to stay within the quota, and a note saying so: undo
	// reaches less far back than it did.
	PrunedVersions int    `json:"pruned_versions,omitempty"`
	PrunedBytes    int64  `json:"pruned_bytes,omitempty"`
	Note           string `json:"note,omitempty"`
}

// ReadResult is opfs_read's result: Content and the line fields in text mode, DataURL
// in blob mode.
type ReadResult struct {
	Path       string `json:"path"`
	Mode       string `json:"mode"` // "text" or "blob"
	MIME       string `json:"mime"`
	Size       int64  `json:"size"`
	Content    string `json:"content,omitempty"`
	TotalLines *int   `json:"total_lines,omitempty"`
	Offset     int    `json:"offset,omitempty"` // first line returned, from 1
	Lines      *int   `json:"lines,omitempty"`  // how many lines were returned
	Truncated  bool   `json:"truncated,omitempty"`
	DataURL    string `json:"data_url,omitempty"`
	Note       string `json:"note,omitempty"`
}

// Entry is one item of opfs_list's result.
type Entry struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // "file" or "dir"
	Size     int64  `json:"size"`
	Modified string `json:"modified"` // RFC 3339, UTC
}

// ListResult is opfs_list's result.
type ListResult struct {
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
}

// DeleteResult is opfs_delete's result.
type DeleteResult struct {
	Path    string   `json:"path"`
	Removed []string `json:"removed"`
	Files   int      `json:"files"`
	Bytes   int64    `json:"bytes"`
}

const pathRules = "Paths are relative to the workspace root (a leading / is optional), separated by /, case-sensitive; folders exist implicitly through the files in them."

// Tools returns the workspace tools.
func Tools(deps Deps) []tools.Tool {
	return []tools.Tool{{
		Name: "opfs_write",
		Description: "Write a file to the workspace, creating or replacing it (the previous content is kept as a version so the write can be undone). " +
			"content is text, or a data URL (data:<mime>;base64,<data>) for binary content, which is decoded and stored as bytes. " +
			pathRules + ` Returns {"path", "size", "mime", "version", "created"}, and pruned_versions, pruned_bytes and a note when the workspace was full and the oldest earlier versions were dropped to make room.`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "file path, like notes/todo.md"},
    "content": {"type": "string", "description": "the file's content: text, or a data URL (data:image/png;base64,...) for binary data"}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		Kind:   tools.KindWrite,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var args struct {
				Path    string  `json:"path"`
				Content *string `json:"content"`
			}
			if err := call.Decode(&args); err != nil {
				return nil, err
			}
			if args.Content == nil {
				return nil, tools.Failf(tools.CodeInvalidParams, "content is required (text, or a data URL for binary data)")
			}
			content, mimeType, err := decodeContent(*args.Content)
			if err != nil {
				return nil, err
			}
			info, err := deps.Store.WriteFile(ctx, args.Path, content, mimeType)
			if err != nil {
				return nil, err
			}
			out := WriteResult{Path: info.Path, Size: info.Size, MIME: info.MIME, Version: info.Version, Created: info.Version == 1,
				PrunedVersions: info.Pruned.Versions, PrunedBytes: info.Pruned.Bytes}
			if info.Pruned.Versions > 0 {
				out.Note = fmt.Sprintf("the workspace was full: the %d oldest earlier versions (%d bytes) were dropped to make room (setting %s)",
					info.Pruned.Versions, info.Pruned.Bytes, storage.SettingWorkspacePruneWhenFull)
			}
			return out, nil
		},
	}, {
		Name: "opfs_read",
		Description: "Read a file from the workspace. mode auto (default) returns text files as text and binary files as a data URL; text or blob forces one. " +
			`Returns for text {"path", "mode": "text", "mime", "size", "content", "total_lines", "offset", "lines", "truncated", "note"}; ` +
			fmt.Sprintf("a text file over %d lines read without offset/limit returns its first %d lines with a note telling how to read on (offset is 1-based). ", PageLines, PageLines) +
			`For binary it returns {"path", "mode": "blob", "mime", "size", "data_url"}. ` + pathRules,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "file path"},
    "mode": {"type": "string", "enum": ["auto", "text", "blob"], "default": "auto", "description": "auto: text for text files, a data URL for binary ones; text or blob forces the form"},
    "offset": {"type": "integer", "minimum": 1, "description": "first line to return, counting from 1 (text only)"},
    "limit": {"type": "integer", "minimum": 1, "description": "how many lines to return (text only; default 200)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		Kind:   tools.KindRead,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var args readArgs
			if err := call.Decode(&args); err != nil {
				return nil, err
			}
			switch args.Mode {
			case "":
				args.Mode = "auto"
			case "auto", "text", "blob":
			default:
				return nil, tools.Failf(tools.CodeInvalidParams, "mode must be auto, text or blob, not %q", args.Mode)
			}
			if (args.Offset != nil && *args.Offset < 1) || (args.Limit != nil && *args.Limit < 1) {
				return nil, tools.Failf(tools.CodeInvalidParams, "offset and limit count lines from 1; give positive numbers")
			}
			f, err := deps.Store.ReadFile(ctx, args.Path)
			if err != nil {
				return nil, err
			}
			return read(f, args)
		},
	}, {
		Name: "opfs_list",
		Description: "List a workspace folder's immediate contents (the root when path is omitted). " + pathRules +
			` Returns {"path", "entries": [{"name", "type": "file"|"dir", "size", "modified"}]}; a folder's size is the total of the files under it, modified the newest.`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "default": "/", "description": "folder path; omitted or / for the root"}
  },
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		Kind:   tools.KindRead,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var args struct {
				Path string `json:"path"`
			}
			if err := call.Decode(&args); err != nil {
				return nil, err
			}
			out, err := list(ctx, deps.Store, args.Path)
			if err != nil {
				return nil, err
			}
			return out, nil
		},
	}, {
		Name: "opfs_delete",
		Description: "Delete a file, or a folder with everything in it, from the workspace. The root cannot be deleted. " + pathRules +
			` Returns {"path", "removed": [paths], "files", "bytes"}.`,
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "file or folder path"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		Kind:   tools.KindWrite,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var args struct {
				Path string `json:"path"`
			}
			if err := call.Decode(&args); err != nil {
				return nil, err
			}
			out, err := remove(ctx, deps.Store, args.Path)
			if err != nil {
				return nil, err
			}
			return out, nil
		},
	}}
}

// timeFormat is how both the tools and the options page write a modification time.
const timeFormat = time.RFC3339

// list is a folder's immediate contents; "", "/" and "." are the root.
func list(ctx context.Context, store Store, path string) (ListResult, error) {
	dir, err := storage.CleanPath(path)
	if err != nil {
		return ListResult{}, fmt.Errorf("workspace path %q: %w", path, err)
	}
	es, err := store.List(ctx, dir)
	if err != nil {
		return ListResult{}, err
	}
	out := ListResult{Path: dir, Entries: make([]Entry, 0, len(es))}
	for _, e := range es {
		out.Entries = append(out.Entries, Entry{Name: e.Name, Type: e.Type, Size: e.Size, Modified: e.Modified.UTC().Format(timeFormat)})
	}
	return out, nil
}

// join is the path of name in the folder dir (both as CleanPath gives them).
func join(dir, name string) string { return strings.TrimSuffix(dir, "/") + "/" + name }

// remove deletes a file or a folder with everything in it.
func remove(ctx context.Context, store Store, path string) (DeleteResult, error) {
	removed, err := store.Delete(ctx, path)
	if err != nil {
		return DeleteResult{}, err
	}
	out := DeleteResult{Removed: make([]string, 0, len(removed)), Files: len(removed)}
	out.Path, _ = storage.CleanPath(path)
	for _, r := range removed {
		out.Removed = append(out.Removed, r.Path)
		out.Bytes += r.Size
	}
	return out, nil
}

// decodeContent turns opfs_write's content into bytes and, for a data URL, its MIME
// type ("" lets storage detect it). Content is a data URL when it starts with "data:"
// and either has no whitespace before its first comma or none at all: data URLs never
// hold whitespace in their header, and text that merely starts with "data:" (a YAML
// key, say) nearly always does. A data URL that does not decode is refused rather
// than stored as text, since the caller clearly meant bytes.
func decodeContent(s string) ([]byte, string, error) {
	if !strings.HasPrefix(s, "data:") {
		return []byte(s), "", nil
	}
	header, payload, hasComma := strings.Cut(s[len("data:"):], ",")
	if strings.ContainsAny(header, " \t\r\n") || (!hasComma && strings.ContainsAny(s, " \t\r\n")) {
		return []byte(s), "", nil
	}
	bad := func(format string, args ...any) error {
		return tools.Failf(tools.CodeInvalidParams, "content looks like a data URL but "+format+
			"; send binary data as data:<mime>;base64,<base64>, or to store this text as is, send it as data:text/plain;base64,<its base64>", args...)
	}
	if !hasComma {
		return nil, "", bad("has no comma between its header and its data")
	}
	mediaType, isBase64 := header, false
	if h, ok := strings.CutSuffix(header, ";base64"); ok {
		mediaType, isBase64 = h, true
	}
	if mediaType != "" {
		mt, params, err := mime.ParseMediaType(mediaType)
		if err != nil {
			return nil, "", bad("its media type %q does not parse (%v)", mediaType, err)
		}
		if !strings.Contains(mt, "/") {
			return nil, "", bad("its media type %q is not type/subtype", mediaType)
		}
		if mt == "text/plain" && len(params) == 0 {
			mediaType = "" // the RFC 2397 default says nothing more than detection would
		} else {
			mediaType = mime.FormatMediaType(mt, params)
		}
	}
	if !isBase64 {
		data, err := url.PathUnescape(payload)
		if err != nil {
			return nil, "", bad("its percent-encoded data is malformed (%v)", err)
		}
		return []byte(data), mediaType, nil
	}
	// Encoders often wrap base64 at 76 columns and some drop the padding; neither
	// changes the bytes.
	payload = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, payload)
	data, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "="))
	if err != nil {
		return nil, "", bad("its base64 data does not decode (%v)", err)
	}
	return data, mediaType, nil
}

type readArgs struct {
	Path   string `json:"path"`
	Mode   string `json:"mode"`
	Offset *int   `json:"offset"`
	Limit  *int   `json:"limit"`
}

func read(f storage.File, args readArgs) (any, error) {
	paged := args.Offset != nil || args.Limit != nil
	if args.Mode == "blob" || (args.Mode == "auto" && !f.IsText) {
		if paged {
			return nil, tools.Failf(tools.CodeInvalidParams, "offset and limit page through text, but %s is returned as a data URL (%s, %d bytes); drop them, or read it with mode text",
				f.Path, f.MIME, f.Size)
		}
		return ReadResult{Path: f.Path, Mode: "blob", MIME: f.MIME, Size: f.Size, DataURL: dataURL(f.MIME, f.Content)}, nil
	}
	text := string(f.Content)
	var note string
	if !f.IsText {
		text = strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", "\uFFFD"), "\uFFFD")
		note = "the file is not UTF-8 text: invalid bytes and NULs are shown as U+FFFD; read it with mode blob for the exact bytes. "
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // a final newline ends the last line; it does not start another
	}
	total := len(lines)
	offset, limit := 1, PageLines
	if args.Offset != nil {
		offset = *args.Offset
	}
	if args.Limit != nil {
		limit = *args.Limit
	}
	if !paged && total <= PageLines {
		limit = total
	}
	if offset > total && !(offset == 1 && total == 0) {
		return nil, tools.Failf(tools.CodeInvalidParams, "offset %d is past the end of %s, which has %d lines", offset, f.Path, total)
	}
	end := min(offset-1+limit, total)
	shown := end - (offset - 1)
	out := ReadResult{
		Path: f.Path, Mode: "text", MIME: f.MIME, Size: f.Size,
		Content:    strings.Join(lines[offset-1:end], ""),
		TotalLines: &total, Offset: offset, Lines: &shown,
		Truncated: offset > 1 || end < total,
	}
	if end < total {
		note += fmt.Sprintf("showing lines %d-%d of %d; to read on, call opfs_read with offset %d (1-based) and limit up to %d", offset, end, total, end+1, PageLines)
	}
	out.Note = strings.TrimSpace(note)
	return out, nil
}

func dataURL(mimeType string, content []byte) string {
	// "text/plain; charset=utf-8" as stored; a data URL's header holds no spaces.
	return "data:" + strings.ReplaceAll(mimeType, " ", "") + ";base64," + base64.StdEncoding.EncodeToString(content)
}
