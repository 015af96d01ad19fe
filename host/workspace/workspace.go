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
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	WriteFileAs(ctx context.Context, path string, content []byte, mimeType, provenance string) (storage.FileInfo, error)
	ReadFile(ctx context.Context, path string) (storage.File, error)
	Stat(ctx context.Context, path string) (storage.FileInfo, error)
	List(ctx context.Context, dir string) ([]storage.Entry, error)
	Delete(ctx context.Context, path string) ([]storage.FileInfo, error)
}

// Deps is what the workspace tools need from the host.
type Deps struct {
	Store Store
}

// Bounds of one opfs_read. PageLines is how many lines of a text file it returns
// when no limit is given: enough for most files, few enough not to flood the model's
// context. MaxReadChars caps the characters of one text page whatever its lines (a
// minified file can be one 50 MiB line), and MaxReadBytes the bytes of one binary
// page (a data URL is a third larger).
const (
	PageLines    = 200
	MaxReadChars = 50000
	MaxReadBytes = 48 << 10
)

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
// and the byte fields in blob mode. Offset counts lines from 1 in text mode and bytes
// from 0 in blob mode; NextOffset (and NextColumn, inside a line longer than a page)
// is where the next page starts when this one did not reach the end.
type ReadResult struct {
	Path       string `json:"path"`
	Mode       string `json:"mode"` // "text" or "blob"
	MIME       string `json:"mime"`
	Size       int64  `json:"size"`
	Content    string `json:"content,omitempty"`
	TotalLines *int   `json:"total_lines,omitempty"`
	Offset     int64  `json:"offset"`
	Column     int    `json:"column,omitempty"` // first character of the first line shown, from 1, when not its start
	Lines      *int   `json:"lines,omitempty"`  // how many lines were returned (in whole or in part)
	Bytes      *int64 `json:"bytes,omitempty"`  // how many bytes data_url holds
	Truncated  bool   `json:"truncated,omitempty"`
	NextOffset *int64 `json:"next_offset,omitempty"`
	// provenance is the content's, as stored with it (readFile).
	provenance string
	NextColumn int    `json:"next_column,omitempty"`
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

// Tools returns the workspace tools.
func Tools(deps Deps) []tools.Tool {
	return []tools.Tool{{
		Name:        "opfs_write",
		Description: "Write a workspace file, creating or replacing it. content is text, or a data URL (data:<mime>;base64,<data>) for bytes.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "content": {"type": "string"}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		Kind:   tools.KindWrite,
		// A file's body is the person's data: the audit log keeps its size and hash,
		// so deleting the file leaves no copy of it there.
		AuditShape: []string{"content"},
		// Overwriting destroys what was there; the content keeps its writer's labels
		// (call.Taint), which come back whenever it is read.
		Class:   tools.ClassDestroy,
		Effects: deps.overwrites,
		Provenance: func(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
			if w, ok := res.Result.(WriteResult); ok && res.Success && w.Created {
				return tools.Provenance{Creates: []tools.Artefact{{Kind: tools.ArtefactFile, ID: w.Path}}}
			}
			return tools.Provenance{}
		},
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
			info, err := deps.Store.WriteFileAs(ctx, args.Path, content, mimeType, call.Taint.JSON())
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
		Description: "Read a workspace file, a page at a time: mode auto gives a text file as text, a binary one as a data URL; text or blob forces one. " +
			fmt.Sprintf("Text pages by lines: offset from 1, limit (default %d), at most %d characters; column (from 1) starts inside a longer line. ", PageLines, MaxReadChars) +
			fmt.Sprintf("Binary pages by bytes: offset from 0, limit at most %d. next_offset (and next_column) say where the next page starts.", MaxReadBytes),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "mode": {"type": "string", "enum": ["auto", "text", "blob"]},
    "offset": {"type": "integer", "minimum": 0},
    "limit": {"type": "integer", "minimum": 1},
    "column": {"type": "integer", "minimum": 1}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
		Source:     tools.SourceBuiltin,
		Kind:       tools.KindRead,
		AuditShape: []string{"content", "data_url"},
		Class:      tools.ClassRead,
		Provenance: readFile,
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
			if (args.Offset != nil && *args.Offset < 0) || (args.Limit != nil && *args.Limit < 1) || (args.Column != nil && *args.Column < 1) {
				return nil, tools.Failf(tools.CodeInvalidParams, "offset is 0 or more, limit and column 1 or more")
			}
			f, err := deps.Store.ReadFile(ctx, args.Path)
			if err != nil {
				return nil, err
			}
			return read(f, args)
		},
	}, {
		Name:        "opfs_list",
		Description: "List a workspace folder's entries (the root without path); a folder's size and modified are its files' total and newest.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"}
  },
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		Kind:   tools.KindRead,
		// Whoever wrote the files named them: the names are untrusted.
		Class: tools.ClassRead,
		Provenance: func(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
			if !res.Success {
				return tools.Provenance{}
			}
			return tools.Provenance{Reads: []tools.Read{{Source: tools.SourceWorkspace, Private: true, Untrusted: true}}}
		},
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
		Name:        "opfs_delete",
		Description: "Delete a workspace file, or a folder and all in it (not the root).",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
		Source:  tools.SourceBuiltin,
		Kind:    tools.KindWrite,
		Class:   tools.ClassDestroy,
		Effects: deps.deletes,
		Provenance: func(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
			d, ok := res.Result.(DeleteResult)
			if !ok || !res.Success {
				return tools.Provenance{}
			}
			p := tools.Provenance{}
			for _, r := range d.Removed {
				p.Removes = append(p.Removes, tools.Artefact{Kind: tools.ArtefactFile, ID: r})
			}
			return p
		},
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

// pathOf is the canonical path a call names; ok is false for one the tool refuses
// itself (it then has no effect to declare).
func pathOf(call *tools.Call) (p string, ok bool, err error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := call.Decode(&a); err != nil {
		return "", false, err
	}
	p, err = storage.CleanPath(a.Path)
	return p, err == nil, nil
}

// overwrites: opfs_write destroys the file's current content when there is one.
func (deps Deps) overwrites(ctx context.Context, call *tools.Call) (tools.Effect, error) {
	p, ok, err := pathOf(call)
	if !ok {
		return tools.Effect{}, err
	}
	switch _, err := deps.Store.Stat(ctx, p); {
	case err == nil:
		return tools.Effect{Destroys: []tools.Artefact{{Kind: tools.ArtefactFile, ID: p,
			What: fmt.Sprintf("overwrites %s in the workspace, which this conversation did not create and you did not name", p)}}}, nil
	case !errors.Is(err, storage.ErrFileNotFound):
		return tools.Effect{Destroys: []tools.Artefact{{Kind: tools.ArtefactFile, ID: p,
			What: fmt.Sprintf("may overwrite %s in the workspace (%v)", p, err)}}}, nil
	}
	return tools.Effect{}, nil
}

// maxDeleteWalk bounds how many files a delete's effect names; a folder with more is
// one thing the rule cannot match to the run's own files.
const maxDeleteWalk = 200

// deletes: opfs_delete destroys every file under its path.
func (deps Deps) deletes(ctx context.Context, call *tools.Call) (tools.Effect, error) {
	p, ok, err := pathOf(call)
	if !ok {
		return tools.Effect{}, err
	}
	what := func(f string) string {
		return fmt.Sprintf("deletes %s from the workspace, which this conversation did not create", f)
	}
	var e tools.Effect
	if _, err := deps.Store.Stat(ctx, p); err == nil {
		e.Destroys = []tools.Artefact{{Kind: tools.ArtefactFile, ID: p, What: what(p)}}
		return e, nil
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		es, err := deps.Store.List(ctx, dir)
		if err != nil {
			return err
		}
		for _, x := range es {
			child := join(dir, x.Name)
			if x.Type == "dir" {
				if err := walk(child); err != nil {
					return err
				}
				continue
			}
			if len(e.Destroys) >= maxDeleteWalk {
				return errors.New("too many files")
			}
			e.Destroys = append(e.Destroys, tools.Artefact{Kind: tools.ArtefactFile, ID: child, What: what(child)})
		}
		return nil
	}
	if err := walk(p); err != nil {
		e.Destroys = append(e.Destroys, tools.Artefact{Kind: tools.ArtefactFile, ID: p + "/…", What: what(p)})
	}
	return e, nil
}

// readFile: a file's content brings back the labels its writer kept with it; only
// what the person wrote themselves counts as content seen (a model's words never do).
func readFile(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
	if !res.Success {
		return tools.Provenance{}
	}
	var taint tools.Taint
	var text string
	switch r := res.Result.(type) {
	case ReadResult:
		taint, text = tools.ParseTaint(r.provenance), r.Content
	case *ReadResult:
		taint, text = tools.ParseTaint(r.provenance), r.Content
	default:
		taint = tools.Taint{Untrusted: true}
	}
	read := tools.Read{Source: tools.SourceWorkspace, Private: true, Untrusted: taint.Untrusted, Carried: &taint}
	if taint.Person {
		read.Content = text
	}
	return tools.Provenance{Reads: []tools.Read{read}}
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
	Offset *int64 `json:"offset"`
	Limit  *int64 `json:"limit"`
	Column *int   `json:"column"`
}

func read(f storage.File, args readArgs) (any, error) {
	if args.Mode == "blob" || (args.Mode == "auto" && !f.IsText) {
		return readBlob(f, args)
	}
	return readText(f, args)
}

// readBlob returns one page of the file's bytes as a data URL.
func readBlob(f storage.File, args readArgs) (any, error) {
	if args.Column != nil {
		return nil, tools.Failf(tools.CodeInvalidParams, "column pages inside a line of text, but %s is returned as bytes (%s); page it with offset (bytes from 0) and limit, or read it with mode text", f.Path, f.MIME)
	}
	var offset int64
	if args.Offset != nil {
		offset = *args.Offset
	}
	limit := int64(MaxReadBytes)
	if args.Limit != nil {
		if *args.Limit > MaxReadBytes {
			return nil, tools.Failf(tools.CodeInvalidParams, "limit %d is over the %d bytes one call returns; read %s in pages of at most %d bytes", *args.Limit, MaxReadBytes, f.Path, MaxReadBytes)
		}
		limit = *args.Limit
	}
	if offset > f.Size || (offset == f.Size && f.Size > 0) {
		return nil, tools.Failf(tools.CodeInvalidParams, "offset %d is past the end of %s, which has %d bytes (offsets of binary files count bytes from 0)", offset, f.Path, f.Size)
	}
	end := min(offset+limit, f.Size)
	n := end - offset
	out := ReadResult{Path: f.Path, Mode: "blob", MIME: f.MIME, Size: f.Size, Offset: offset, Bytes: &n, provenance: f.Provenance,
		DataURL: dataURL(f.MIME, f.Content[offset:end]), Truncated: offset > 0 || end < f.Size}
	if end < f.Size {
		out.NextOffset = &end
		out.Note = fmt.Sprintf("showing bytes %d-%d of %d; to read on, call opfs_read with mode blob and offset %d (bytes from 0)", offset, end-1, f.Size, end)
	}
	return out, nil
}

// readText returns one page of lines, at most PageLines (or limit) of them and at
// most MaxReadChars characters. A page ends after a whole line, except when its
// first line alone is longer than a page: then it holds that line's next part.
func readText(f storage.File, args readArgs) (any, error) {
	text := string(f.Content)
	var note string
	if !f.IsText {
		text = strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", "\uFFFD"), "\uFFFD")
		note = "the file is not UTF-8 text: invalid bytes and NULs are shown as U+FFFD; read it with mode blob for the exact bytes. "
	}
	total := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		total++ // a final newline ends the last line; it does not start another
	}
	offset, limit, column := int64(1), int64(PageLines), 1
	if args.Offset != nil {
		offset = *args.Offset
	}
	if args.Limit != nil {
		limit = *args.Limit
	}
	if args.Column != nil {
		column = *args.Column
	}
	if offset < 1 {
		return nil, tools.Failf(tools.CodeInvalidParams, "offset %d: lines count from 1 (offsets from 0 are for binary files, mode blob)", offset)
	}
	if offset > int64(total) && !(offset == 1 && total == 0) {
		return nil, tools.Failf(tools.CodeInvalidParams, "offset %d is past the end of %s, which has %d lines", offset, f.Path, total)
	}
	// The start of line offset.
	start := 0
	for i := int64(1); i < offset; i++ {
		start += strings.IndexByte(text[start:], '\n') + 1
	}
	if column > 1 {
		line := text[start:]
		if nl := strings.IndexByte(line, '\n'); nl >= 0 {
			line = line[:nl]
		}
		pos, ok := runeIndex(line, column-1)
		if !ok {
			return nil, tools.Failf(tools.CodeInvalidParams, "column %d is past the end of line %d of %s, which has %d characters", column, offset, f.Path, utf8.RuneCountInString(line))
		}
		start += pos
	}
	// Whole lines while they fit; a first line longer than a page is cut.
	end, chars, shown := start, 0, 0
	cut := false
	for end < len(text) && int64(shown) < limit {
		next := len(text)
		if nl := strings.IndexByte(text[end:], '\n'); nl >= 0 {
			next = end + nl + 1
		}
		n := utf8.RuneCountInString(text[end:next])
		if chars+n > MaxReadChars {
			if shown == 0 {
				pos, _ := runeIndex(text[end:next], MaxReadChars)
				end, chars, shown, cut = end+pos, MaxReadChars, 1, true
			}
			break
		}
		end, chars, shown = next, chars+n, shown+1
	}
	out := ReadResult{
		provenance: f.Provenance,
		Path:       f.Path, Mode: "text", MIME: f.MIME, Size: f.Size,
		Content: text[start:end], TotalLines: &total, Offset: offset, Lines: &shown,
		Truncated: start > 0 || end < len(text),
	}
	if column > 1 {
		out.Column = column
	}
	switch {
	case cut:
		// Still inside line offset (or the one this page started in).
		line := offset
		col := column + chars
		out.NextOffset, out.NextColumn = &line, col
		note += fmt.Sprintf("line %d is longer than the %d characters one call returns: showing its characters %d-%d; to read on, call opfs_read with offset %d and column %d", line, MaxReadChars, col-chars, col-1, line, col)
	case end < len(text):
		next := offset + int64(shown)
		out.NextOffset = &next
		last := next - 1
		why := ""
		if int64(shown) < limit {
			why = fmt.Sprintf(" (a page holds at most %d characters)", MaxReadChars)
		}
		note += fmt.Sprintf("showing lines %d-%d of %d%s; to read on, call opfs_read with offset %d (1-based) and limit up to %d", offset, last, total, why, next, PageLines)
	}
	out.Note = strings.TrimSpace(note)
	return out, nil
}

// runeIndex is the byte index of the n-th character of s (0-based); ok is false when
// s has fewer than n characters (n == its length is its end).
func runeIndex(s string, n int) (int, bool) {
	if n == 0 {
		return 0, true
	}
	i := 0
	for pos := range s {
		if i == n {
			return pos, true
		}
		i++
	}
	return len(s), i == n
}

func dataURL(mimeType string, content []byte) string {
	// "text/plain; charset=utf-8" as stored; a data URL's header holds no spaces.
	return "data:" + strings.ReplaceAll(mimeType, " ", "") + ";base64," + base64.StdEncoding.EncodeToString(content)
}
