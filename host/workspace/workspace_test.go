package workspace

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

type harness struct {
	t     *testing.T
	db    *storage.DB
	tools map[string]tools.Tool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &harness{t: t, db: db, tools: map[string]tools.Tool{}}
	for _, tool := range Tools(Deps{Store: db}) {
		h.tools[tool.Name] = tool
	}
	return h
}

// call runs a tool directly, as the pipeline's last step would.
func (h *harness) call(name, args string) (any, error) {
	h.t.Helper()
	tool, ok := h.tools[name]
	if !ok {
		h.t.Fatalf("no tool %s", name)
	}
	return tool.Run(context.Background(), &tools.Call{ID: "t", Tool: name, Arguments: json.RawMessage(args), Caller: "test"})
}

func (h *harness) ok(name, args string) any {
	h.t.Helper()
	res, err := h.call(name, args)
	if err != nil {
		h.t.Fatalf("%s %s: %v", name, args, err)
	}
	return res
}

func (h *harness) fails(name, args string, code tools.Code, reason string) {
	h.t.Helper()
	_, err := h.call(name, args)
	f, ok := tools.AsFailure(err)
	if !ok || f.Code != code || !strings.Contains(f.Reason, reason) {
		h.t.Errorf("%s %s: %v; want %s mentioning %q", name, args, err, code, reason)
	}
}

func TestToolDefinitions(t *testing.T) {
	want := map[string]tools.Kind{"opfs_write": tools.KindWrite, "opfs_read": tools.KindRead, "opfs_list": tools.KindRead, "opfs_delete": tools.KindWrite}
	ts := Tools(Deps{})
	if len(ts) != len(want) {
		t.Fatalf("%d tools", len(ts))
	}
	for _, tool := range ts {
		var schema map[string]any
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: parameters are not a JSON Schema object: %v", tool.Name, err)
		}
		if want[tool.Name] != tool.Kind || tool.Source != tools.SourceBuiltin || tool.Run == nil || tool.Description == "" {
			t.Errorf("%s: %+v", tool.Name, tool)
		}
	}
	for _, key := range []string{storage.SettingWorkspaceQuota, storage.SettingWorkspaceVersionsKept} {
		s, err := config.Lookup(key)
		if err != nil {
			t.Fatal(err)
		}
		if s.Check("-1") == nil || s.Check("abc") == nil || s.Check(s.Default) != nil {
			t.Errorf("%s: validation", key)
		}
	}
}

func TestWriteReadText(t *testing.T) {
	h := newHarness(t)
	w := h.ok("opfs_write", `{"path": "notes//./todo.md", "content": "# Todo\n- one\n"}`).(WriteResult)
	if w.Path != "/notes/todo.md" || w.Size != 13 || !w.Created || w.Version != 1 || !strings.HasPrefix(w.MIME, "text/markdown") {
		t.Fatalf("write: %+v", w)
	}
	w = h.ok("opfs_write", `{"path": "/notes/todo.md", "content": "# Todo\n- one\n- two\n"}`).(WriteResult)
	if w.Created || w.Version != 2 {
		t.Fatalf("rewrite: %+v", w)
	}
	r := h.ok("opfs_read", `{"path": "notes/todo.md"}`).(ReadResult)
	if r.Mode != "text" || r.Content != "# Todo\n- one\n- two\n" || *r.TotalLines != 3 || *r.Lines != 3 || r.Offset != 1 || r.Truncated || r.Note != "" {
		t.Fatalf("read: %+v", r)
	}
	// The JSON the model sees.
	b, _ := json.Marshal(r)
	if got := string(b); !strings.Contains(got, `"total_lines":3`) || strings.Contains(got, "data_url") {
		t.Errorf("read JSON: %s", got)
	}
	// Text that merely starts with "data:" is text.
	for _, text := range []string{"data: 1\nmore: 2\n", "data:  spaced, x", "data:"} {
		args, _ := json.Marshal(map[string]string{"path": "/t.yaml", "content": text})
		if text == "data:" {
			h.fails("opfs_write", string(args), tools.CodeInvalidParams, "no comma")
			continue
		}
		h.ok("opfs_write", string(args))
		if r := h.ok("opfs_read", `{"path": "/t.yaml"}`).(ReadResult); r.Content != text {
			t.Errorf("%q read back as %q", text, r.Content)
		}
	}
	// Empty file.
	h.ok("opfs_write", `{"path": "/empty", "content": ""}`)
	r = h.ok("opfs_read", `{"path": "/empty"}`).(ReadResult)
	if r.Mode != "text" || r.Content != "" || *r.TotalLines != 0 {
		t.Errorf("empty: %+v", r)
	}
	h.fails("opfs_write", `{"path": "/x"}`, tools.CodeInvalidParams, "content is required")
}

func TestBinaryRoundTrip(t *testing.T) {
	h := newHarness(t)
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0, 255, 128}, 100)...)
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	w := h.ok("opfs_write", fmt.Sprintf(`{"path": "img/a.png", "content": %q}`, url)).(WriteResult)
	if w.Size != int64(len(png)) || w.MIME != "image/png" {
		t.Fatalf("write: %+v", w)
	}
	r := h.ok("opfs_read", `{"path": "img/a.png"}`).(ReadResult)
	if r.Mode != "blob" || r.DataURL != url || r.Size != int64(len(png)) || r.MIME != "image/png" || r.Content != "" || r.TotalLines != nil {
		t.Fatalf("read auto: %+v", r)
	}
	if r := h.ok("opfs_read", `{"path": "img/a.png", "mode": "blob"}`).(ReadResult); r.DataURL != url {
		t.Fatal("blob mode differs")
	}
	// Forcing text on binary replaces what is not UTF-8, and says so.
	r = h.ok("opfs_read", `{"path": "img/a.png", "mode": "text"}`).(ReadResult)
	if r.Mode != "text" || !strings.Contains(r.Content, "PNG") || !strings.Contains(r.Note, "mode blob") {
		t.Fatalf("text mode on binary: %+v", r)
	}
	h.fails("opfs_read", `{"path": "img/a.png", "column": 2}`, tools.CodeInvalidParams, "as bytes")
	// Binary pages by bytes, from 0.
	r = h.ok("opfs_read", `{"path": "img/a.png", "offset": 2, "limit": 5}`).(ReadResult)
	if r.DataURL != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png[2:7]) || *r.Bytes != 5 || r.Offset != 2 || *r.NextOffset != 7 || !strings.Contains(r.Note, "offset 7") {
		t.Fatalf("a page of bytes: %+v", r)
	}
	h.fails("opfs_read", fmt.Sprintf(`{"path": "img/a.png", "offset": %d}`, len(png)), tools.CodeInvalidParams, "past the end")

	// Forcing blob on text gives its bytes.
	h.ok("opfs_write", `{"path": "a.txt", "content": "héllo"}`)
	r = h.ok("opfs_read", `{"path": "a.txt", "mode": "blob"}`).(ReadResult)
	if r.DataURL != "data:text/plain;charset=utf-8;base64,"+base64.StdEncoding.EncodeToString([]byte("héllo")) {
		t.Fatalf("blob of text: %s", r.DataURL)
	}

	// Other data URL forms: no media type, percent-encoding, wrapped and unpadded base64.
	for _, c := range []struct{ url, want, mime string }{
		{"data:,hello%20world", "hello world", "text/plain"},
		{"data:;base64,aGk=", "hi", "text/plain"},
		{"data:application/octet-stream;base64,aGk", "hi", "application/octet-stream"},
		{"data:application/json;base64,eyJh\nIjox\r\nfQ==", `{"a":1}`, "application/json"},
		{"data:text/csv;charset=UTF-8,a%2Cb", "a,b", "text/csv; charset=UTF-8"},
	} {
		args, _ := json.Marshal(map[string]string{"path": "/d", "content": c.url})
		w := h.ok("opfs_write", string(args)).(WriteResult)
		f, _ := h.db.ReadFile(context.Background(), "/d")
		if string(f.Content) != c.want || !strings.HasPrefix(w.MIME, c.mime) {
			t.Errorf("%s: stored %q as %s", c.url, f.Content, w.MIME)
		}
	}
	// Malformed data URLs are refused, and the file is left alone.
	for url, reason := range map[string]string{
		"data:image/png;base64,!!!notbase64": "base64",
		"data:image/png;base64":              "no comma",
		"data:not a/type;base64,AAAA":        "", // whitespace in the header: plain text
		"data:image;base64,AAAA":             "type/subtype",
		"data:text/plain,%zz":                "percent",
	} {
		args, _ := json.Marshal(map[string]string{"path": "/d", "content": url})
		if reason == "" {
			h.ok("opfs_write", string(args))
			continue
		}
		h.fails("opfs_write", string(args), tools.CodeInvalidParams, reason)
	}
}

func TestTextPaging(t *testing.T) {
	h := newHarness(t)
	var b strings.Builder
	for i := 1; i <= 450; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "/long.txt", "content": b.String()})
	h.ok("opfs_write", string(args))

	r := h.ok("opfs_read", `{"path": "/long.txt"}`).(ReadResult)
	if *r.TotalLines != 450 || *r.Lines != 200 || r.Offset != 1 || !r.Truncated ||
		!strings.HasPrefix(r.Content, "line 1\n") || !strings.HasSuffix(r.Content, "line 200\n") ||
		!strings.Contains(r.Note, "offset 201") || !strings.Contains(r.Note, "1-based") {
		t.Fatalf("first page: %+v", r)
	}
	r = h.ok("opfs_read", `{"path": "/long.txt", "offset": 201}`).(ReadResult)
	if *r.Lines != 200 || !strings.HasPrefix(r.Content, "line 201\n") || !strings.HasSuffix(r.Content, "line 400\n") || !strings.Contains(r.Note, "offset 401") {
		t.Fatalf("second page: %+v", r)
	}
	r = h.ok("opfs_read", `{"path": "/long.txt", "offset": 401, "limit": 100}`).(ReadResult)
	if *r.Lines != 50 || !strings.HasSuffix(r.Content, "line 450\n") || r.Note != "" || !r.Truncated {
		t.Fatalf("last page: %+v", r)
	}
	r = h.ok("opfs_read", `{"path": "/long.txt", "limit": 3}`).(ReadResult)
	if r.Content != "line 1\nline 2\nline 3\n" {
		t.Fatalf("limit only: %+v", r)
	}
	r = h.ok("opfs_read", `{"path": "/long.txt", "limit": 1000}`).(ReadResult)
	if *r.Lines != 450 || r.Truncated || r.Content != b.String() {
		t.Fatalf("everything: %+v", *r.Lines)
	}
	h.fails("opfs_read", `{"path": "/long.txt", "offset": 451}`, tools.CodeInvalidParams, "450 lines")
	h.fails("opfs_read", `{"path": "/long.txt", "offset": 0}`, tools.CodeInvalidParams, "from 1")
	h.fails("opfs_read", `{"path": "/long.txt", "mode": "raw"}`, tools.CodeInvalidParams, "auto, text or blob")

	// Exactly 200 lines, and a last line without a newline, are whole.
	h.ok("opfs_write", fmt.Sprintf(`{"path": "/200.txt", "content": %q}`, strings.Repeat("x\n", 199)+"last"))
	r = h.ok("opfs_read", `{"path": "/200.txt"}`).(ReadResult)
	if *r.TotalLines != 200 || r.Truncated || !strings.HasSuffix(r.Content, "x\nlast") {
		t.Fatalf("200 lines: %+v", r)
	}
}

func TestListDeleteAndFailures(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/a/1.txt", "/a/b/2.txt", "/c.txt"} {
		h.ok("opfs_write", fmt.Sprintf(`{"path": %q, "content": "12345"}`, p))
	}
	for _, args := range []string{`{}`, `{"path": "/"}`, `{"path": ""}`, ``} {
		l := h.ok("opfs_list", args).(ListResult)
		var got []string
		for _, e := range l.Entries {
			got = append(got, fmt.Sprintf("%s:%s:%d", e.Name, e.Type, e.Size))
			if !strings.HasSuffix(e.Modified, "Z") {
				t.Errorf("modified %q is not RFC 3339 UTC", e.Modified)
			}
		}
		if l.Path != "/" || fmt.Sprint(got) != "[a:dir:10 c.txt:file:5]" {
			t.Fatalf("list %s: %s %v", args, l.Path, got)
		}
	}
	l := h.ok("opfs_list", `{"path": "a"}`).(ListResult)
	if l.Path != "/a" || len(l.Entries) != 2 || l.Entries[0].Name != "1.txt" || l.Entries[1].Type != "dir" {
		t.Fatalf("list /a: %+v", l)
	}
	h.fails("opfs_list", `{"path": "/c.txt"}`, tools.CodeActionUnavailable, "is a file")
	h.fails("opfs_list", `{"path": "/nope"}`, tools.CodeActionUnavailable, "no such file or folder")
	h.fails("opfs_list", `{"path": "../.."}`, tools.CodeInvalidParams, "above the workspace root")

	d := h.ok("opfs_delete", `{"path": "/a/"}`).(DeleteResult)
	if d.Path != "/a" || d.Files != 2 || d.Bytes != 10 || fmt.Sprint(d.Removed) != "[/a/1.txt /a/b/2.txt]" {
		t.Fatalf("delete: %+v", d)
	}
	h.fails("opfs_delete", `{"path": "/a"}`, tools.CodeActionUnavailable, "no such file")
	h.fails("opfs_delete", `{"path": "/"}`, tools.CodeInvalidParams, "root")
	h.fails("opfs_read", `{"path": "/a/1.txt"}`, tools.CodeActionUnavailable, "no such file")

	// Each path refusal is INVALID_PARAMS with its reason.
	for p, reason := range map[string]string{
		"../x":                   "climbs above",
		"a\\b":                   "backslash",
		"a\u0000b":               "NUL",
		"a\nb":                   "control character",
		strings.Repeat("a", 256): "longer than 255",
	} {
		args, _ := json.Marshal(map[string]string{"path": p, "content": "x"})
		h.fails("opfs_write", string(args), tools.CodeInvalidParams, reason)
	}
	h.fails("opfs_write", `{"path": "/c.txt/x", "content": "x"}`, tools.CodeActionUnavailable, "is a file")
	h.ok("opfs_write", `{"path": "/f/x", "content": "x"}`)
	h.fails("opfs_write", `{"path": "/f", "content": "x"}`, tools.CodeActionUnavailable, "is a folder")
	h.fails("opfs_read", `{"path": "/f"}`, tools.CodeActionUnavailable, "is a folder")

	// A full workspace refuses the write and keeps the old content.
	h.db.SetSetting(context.Background(), storage.SettingWorkspaceQuota, "20")
	h.fails("opfs_write", `{"path": "/c.txt", "content": "this is far too long for the quota"}`, tools.CodeActionUnavailable, "quota")
	if r := h.ok("opfs_read", `{"path": "/c.txt"}`).(ReadResult); r.Content != "12345" {
		t.Fatalf("refused write changed the file: %q", r.Content)
	}
	h.fails("opfs_write", `{"path": 5, "content": "x"}`, tools.CodeInvalidParams, "arguments")
}

// TestReadIsBounded is the finding: opfs_read returned a 50 MiB single-line file in
// one result, and binary files had no cap. Each call now returns at most
// MaxReadChars characters or MaxReadBytes bytes, and the result says exactly where
// the next page starts; following it reads the file back whole.
func TestReadIsBounded(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if err := h.db.SetSetting(ctx, storage.SettingWorkspaceQuota, strconv.Itoa(200<<20)); err != nil {
		t.Fatal(err)
	}
	// One line of 50 MiB, with a multi-byte character at every page boundary to
	// catch a cut inside a character.
	unit := strings.Repeat("a", MaxReadChars-1) + "é"
	line := strings.Repeat(unit, (50<<20)/len(unit)) + "tail"
	content := line + "\nsecond line\n"
	if _, err := h.db.WriteFile(ctx, "/min.js", []byte(content), ""); err != nil {
		t.Fatal(err)
	}
	r := h.ok("opfs_read", `{"path": "/min.js"}`).(ReadResult)
	if n := utf8.RuneCountInString(r.Content); n != MaxReadChars || r.NextOffset == nil || *r.NextOffset != 1 || r.NextColumn != MaxReadChars+1 ||
		!strings.Contains(r.Note, fmt.Sprintf("offset 1 and column %d", MaxReadChars+1)) {
		t.Fatalf("first page: %d characters, next %v:%d, note %q", n, r.NextOffset, r.NextColumn, r.Note)
	}
	if b, _ := json.Marshal(r); len(b) > 4*MaxReadChars {
		t.Fatalf("one result is %d bytes of JSON", len(b))
	}
	// Deep inside the line, and its end.
	last := utf8.RuneCountInString(line) - 10
	r = h.ok("opfs_read", fmt.Sprintf(`{"path": "/min.js", "offset": 1, "column": %d}`, last)).(ReadResult)
	if r.Content != "aaaaaaétail\nsecond line\n" || r.NextOffset != nil || *r.Lines != 2 || r.Column != last {
		t.Fatalf("the line's end: %q, next %v", r.Content, r.NextOffset)
	}
	// Following the pages gives the file back whole (on a line of three pages: every
	// page of the big one costs a read of all of it).
	small := unit + unit + "end\nlast"
	h.db.WriteFile(ctx, "/small.js", []byte(small), "")
	var got strings.Builder
	r = ReadResult{NextOffset: new(int64(1))}
	pages := 0
	for r.NextOffset != nil {
		args := fmt.Sprintf(`{"path": "/small.js", "offset": %d`, *r.NextOffset)
		if r.NextColumn > 0 {
			args += fmt.Sprintf(`, "column": %d`, r.NextColumn)
		}
		r = h.ok("opfs_read", args+"}").(ReadResult)
		if n := utf8.RuneCountInString(r.Content); n > MaxReadChars || !utf8.ValidString(r.Content) {
			t.Fatalf("page %d: %d characters", pages, n)
		}
		got.WriteString(r.Content)
		pages++
	}
	if got.String() != small || pages != 3 {
		t.Fatalf("%d pages do not add up to the file: %d bytes of %d", pages, got.Len(), len(small))
	}
	h.fails("opfs_read", `{"path": "/min.js", "offset": 2, "column": 13}`, tools.CodeInvalidParams, "past the end of line 2")

	// Many short lines stop at the character cap too, on a line boundary.
	many := strings.Repeat(strings.Repeat("x", 999)+"\n", 120)
	h.db.WriteFile(ctx, "/many.txt", []byte(many), "")
	r = h.ok("opfs_read", `{"path": "/many.txt"}`).(ReadResult)
	if *r.Lines != MaxReadChars/1000 || *r.NextOffset != int64(MaxReadChars/1000+1) || r.NextColumn != 0 || !strings.Contains(r.Note, "at most") {
		t.Fatalf("short lines: %d lines, next %v, note %q", *r.Lines, r.NextOffset, r.Note)
	}

	// A binary file of 5 MiB: one page of MaxReadBytes, then the next.
	bin := bytes.Repeat([]byte{0, 1, 2, 0xff}, (5<<20)/4)
	h.db.WriteFile(ctx, "/blob.bin", bin, "")
	r = h.ok("opfs_read", `{"path": "/blob.bin"}`).(ReadResult)
	if *r.Bytes != MaxReadBytes || *r.NextOffset != MaxReadBytes || len(r.DataURL) > MaxReadBytes*4/3+100 {
		t.Fatalf("binary page: %d bytes, next %v, data URL %d", *r.Bytes, r.NextOffset, len(r.DataURL))
	}
	h.fails("opfs_read", fmt.Sprintf(`{"path": "/blob.bin", "limit": %d}`, MaxReadBytes+1), tools.CodeInvalidParams, "pages of at most")
}
