package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"
)

func TestCleanPath(t *testing.T) {
	long := strings.Repeat("a", MaxSegmentBytes)
	cases := []struct {
		in   string
		want string
		err  error
	}{
		{"", "/", nil},
		{"/", "/", nil},
		{".", "/", nil},
		{"a.txt", "/a.txt", nil},
		{"/a.txt", "/a.txt", nil},
		{"//a///b//", "/a/b", nil},
		{"./a/./b/.", "/a/b", nil},
		{"a/b/../c", "/a/c", nil},
		{"a/..", "/", nil},
		{"A/B.TXT", "/A/B.TXT", nil},     // case is kept: names are case-sensitive
		{"ünï/文件.md", "/ünï/文件.md", nil}, // any printable Unicode
		{"a b/c d", "/a b/c d", nil},
		{"...", "/...", nil},
		{"/" + long, "/" + long, nil},
		{"..", "", ErrPathEscapes},
		{"/../a", "", ErrPathEscapes},
		{"a/../../b", "", ErrPathEscapes},
		{"a/b/../../../etc/passwd", "", ErrPathEscapes},
		{"a\x00b", "", ErrPathNUL},
		{"a\nb", "", ErrPathControl},
		{"a\tb", "", ErrPathControl},
		{"a\x7fb", "", ErrPathControl},
		{"a\u0085b", "", ErrPathControl},
		{`a\b`, "", ErrPathBackslash},
		{`..\..\x`, "", ErrPathBackslash},
		{"a\xffb", "", ErrPathNotUTF8},
		{"/" + long + "x", "", ErrSegmentTooLong},
		{strings.Repeat("abcdefg/", 129), "", ErrPathTooLong},
		{"a/ /b", "", ErrPathEmptySegment},
		{"a/\u3000", "", ErrPathEmptySegment},
		// One name, one form: "é" as e + combining accent (NFD, as macOS sends
		// names) is the same name as the single character.
		{"/cafe\u0301.txt", "/caf\u00e9.txt", nil},
		{"/Ame\u0301lie/\u1100\u1161", "/Am\u00e9lie/\uac00", nil},
		{"/emoji-\U0001F469\U0001F3FD.txt", "/emoji-\U0001F469\U0001F3FD.txt", nil},
		// Characters that make one name look like another are refused.
		{"/invoice\u202Etxt.exe", "", ErrPathInvisible},
		{"/a\u200Bb", "", ErrPathInvisible},
		{"/a\u200Db", "", ErrPathInvisible},
		{"/\uFEFFnotes.md", "", ErrPathInvisible},
		{"/x\u2066y\u2069", "", ErrPathInvisible},
		{"/\u3164", "", ErrPathInvisible},
		{"/a\u2028b", "", ErrPathInvisible},
		{"/tag\U000E0041", "", ErrPathInvisible},
	}
	for _, c := range cases {
		got, err := CleanPath(c.in)
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q, %v", c.in, got, err, c.want, c.err)
		}
	}
}

// FuzzCleanPath: never panics; whatever it accepts is canonical, inside the root and
// a fixed point.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"", "/", "cafe\u0301/\u202e", "a/b", "../x", "a/../../b", "//a//./b/", `a\b`, "a\x00", "文件/../x", strings.Repeat("a/", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := CleanPath(in)
		if err != nil {
			if out != "" {
				t.Fatalf("CleanPath(%q) returned %q with error %v", in, out, err)
			}
			return
		}
		if !strings.HasPrefix(out, "/") || len(out) > MaxPathBytes {
			t.Fatalf("CleanPath(%q) = %q: not rooted or too long", in, out)
		}
		if out != "/" && (strings.HasSuffix(out, "/") || path.Clean(out) != out) {
			t.Fatalf("CleanPath(%q) = %q: not canonical", in, out)
		}
		for _, seg := range strings.Split(out[1:], "/") {
			if out != "/" && (seg == "" || seg == "." || seg == ".." || len(seg) > MaxSegmentBytes) {
				t.Fatalf("CleanPath(%q) = %q: bad segment %q", in, out, seg)
			}
		}
		if strings.ContainsAny(out, "\\\x00") {
			t.Fatalf("CleanPath(%q) = %q: forbidden byte kept", in, out)
		}
		if !norm.NFC.IsNormalString(out) || strings.IndexFunc(out, invisible) >= 0 {
			t.Fatalf("CleanPath(%q) = %q: not NFC, or an invisible character kept", in, out)
		}
		again, err := CleanPath(out)
		if err != nil || again != out {
			t.Fatalf("not idempotent: CleanPath(%q) = %q, then %q, %v", in, out, again, err)
		}
	})
}

func TestWorkspaceRefusesBadPaths(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	for in, want := range map[string]error{
		"../x":                    ErrPathEscapes,
		"a/../../x":               ErrPathEscapes,
		"a\x00":                   ErrPathNUL,
		"a\rb":                    ErrPathControl,
		`dir\file`:                ErrPathBackslash,
		strings.Repeat("x", 2000): ErrPathTooLong,
		strings.Repeat("x", 300):  ErrSegmentTooLong,
		"a/  /b":                  ErrPathEmptySegment,
		"/":                       ErrPathIsRoot,
		"a/..":                    ErrPathIsRoot,
	} {
		_, err := db.WriteFile(ctx, in, []byte("x"), "")
		if !errors.Is(err, want) {
			t.Errorf("WriteFile(%q) = %v, want %v", in, err, want)
		}
		if _, err := db.ReadFile(ctx, in); !errors.Is(err, want) {
			t.Errorf("ReadFile(%q) = %v, want %v", in, err, want)
		}
		if _, err := db.Delete(ctx, in); !errors.Is(err, want) {
			t.Errorf("Delete(%q) = %v, want %v", in, err, want)
		}
	}
	if n, _ := db.WorkspaceUsage(ctx); n.Total() != 0 {
		t.Fatalf("refused writes used %+v", n)
	}

	// A file cannot also be a folder, either way round.
	if _, err := db.WriteFile(ctx, "/dir/file.txt", []byte("x"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := db.WriteFile(ctx, "/dir", []byte("x"), ""); !errors.Is(err, ErrIsFolder) {
		t.Errorf("writing over a folder: %v, want ErrIsFolder", err)
	}
	if _, err := db.WriteFile(ctx, "/dir/file.txt/child", []byte("x"), ""); !errors.Is(err, ErrParentIsFile) {
		t.Errorf("writing under a file: %v, want ErrParentIsFile", err)
	}
	if _, err := db.WriteFile(ctx, "/dir/file.txt/a/b/c", []byte("x"), ""); !errors.Is(err, ErrParentIsFile) || !strings.Contains(err.Error(), "/dir/file.txt is a file") {
		t.Errorf("writing deep under a file: %v, want ErrParentIsFile naming the file", err)
	}
	// Names that only share a prefix are neither parent nor child.
	for _, p := range []string{"/dir.txt", "/dir/file.txt2", "/dir/file.tx", "/di"} {
		if _, err := db.WriteFile(ctx, p, []byte("x"), ""); err != nil {
			t.Errorf("WriteFile(%q): %v", p, err)
		}
	}
	if _, err := db.ReadFile(ctx, "/dir"); !errors.Is(err, ErrIsFolder) {
		t.Errorf("reading a folder: %v, want ErrIsFolder", err)
	}
	if _, err := db.ReadFile(ctx, "/nope"); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("reading a missing file: %v, want ErrFileNotFound", err)
	}
	// Case-sensitive: /DIR is another name.
	if _, err := db.ReadFile(ctx, "/DIR/file.txt"); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("/DIR/file.txt: %v, want ErrFileNotFound", err)
	}
}

func TestWorkspaceRoundTrips(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	clock := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	db.Now = func() time.Time { return clock }

	every := make([]byte, 256*4)
	for i := range every {
		every[i] = byte(i)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...)
	cases := []struct {
		path, mime string
		content    []byte
		wantText   bool
		wantMIME   string
	}{
		{"/bin/every-byte", "", every, false, "application/octet-stream"},
		{"/bin/image.png", "", png, false, "image/png"},
		{"/bin/sniffed", "", png, false, "image/png"},
		{"/bin/declared", "application/x-thing", []byte{0, 1, 2}, false, "application/x-thing"},
		{"/text/empty.txt", "", nil, true, "text/plain; charset=utf-8"},
		{"/text/nul.txt", "", []byte("a\x00b"), false, "text/plain; charset=utf-8"},
		{"/text/utf8", "", []byte("héllo 世界\n"), true, "text/plain; charset=utf-8"},
		{"/text/latin1", "", []byte("h\xe9llo"), false, "text/plain; charset=utf-8"},
	}
	for _, c := range cases {
		info, err := db.WriteFile(ctx, c.path, c.content, c.mime)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		f, err := db.ReadFile(ctx, c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if !bytes.Equal(f.Content, c.content) || f.Content == nil {
			t.Errorf("%s: read %q, wrote %q", c.path, f.Content, c.content)
		}
		if f.IsText != c.wantText || f.Size != int64(len(c.content)) || f.Version != 1 || !f.ModifiedAt.Equal(clock) || !f.CreatedAt.Equal(clock) {
			t.Errorf("%s: info %+v", c.path, f.FileInfo)
		}
		if !strings.HasPrefix(f.MIME, strings.Split(c.wantMIME, ";")[0]) {
			t.Errorf("%s: mime %q, want %q", c.path, f.MIME, c.wantMIME)
		}
		if info != f.FileInfo {
			t.Errorf("%s: WriteFile said %+v, ReadFile %+v", c.path, info, f.FileInfo)
		}
	}
	var total int64
	for _, c := range cases {
		total += int64(len(c.content))
	}
	if n, _ := db.WorkspaceUsage(ctx); n != (Usage{Files: total}) {
		t.Fatalf("usage %+v, want %d in files", n, total)
	}
}

func TestWorkspaceListAndDelete(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := 0
	db.Now = func() time.Time { tick++; return t0.Add(time.Duration(tick) * time.Minute) }

	if es, err := db.List(ctx, "/"); err != nil || len(es) != 0 || es == nil {
		t.Fatalf("empty root: %v %v", es, err)
	}
	for _, p := range []string{"/b.txt", "/a/one.txt", "/a/two.txt", "/a/deep/three.txt", "/a.b", "/c/x"} {
		if _, err := db.WriteFile(ctx, p, []byte(p), ""); err != nil {
			t.Fatal(err)
		}
	}
	es, err := db.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(entries(es))
	if got != "[a dir 37 4 a.b file 4 5 b.txt file 6 1 c dir 4 6]" {
		t.Fatalf("root listing: %s", got)
	}
	es, _ = db.List(ctx, "a/")
	if got := fmt.Sprint(entries(es)); got != "[deep dir 17 4 one.txt file 10 2 two.txt file 10 3]" {
		t.Fatalf("/a listing: %s", got)
	}
	if _, err := db.List(ctx, "/b.txt"); !errors.Is(err, ErrNotFolder) {
		t.Errorf("listing a file: %v", err)
	}
	if _, err := db.List(ctx, "/zzz"); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("listing a missing folder: %v", err)
	}
	if _, err := db.List(ctx, "../"); !errors.Is(err, ErrPathEscapes) {
		t.Errorf("listing above the root: %v", err)
	}

	// Deleting a folder removes everything under it and nothing that merely shares
	// its prefix ("/a.b").
	removed, err := db.Delete(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range removed {
		paths = append(paths, r.Path)
	}
	if fmt.Sprint(paths) != "[/a/deep/three.txt /a/one.txt /a/two.txt]" {
		t.Fatalf("removed %v", paths)
	}
	es, _ = db.List(ctx, "/")
	if got := fmt.Sprint(entries(es)); got != "[a.b file 4 5 b.txt file 6 1 c dir 4 6]" {
		t.Fatalf("after deleting /a: %s", got)
	}
	if _, err := db.Delete(ctx, "/a"); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("deleting again: %v", err)
	}
	if removed, err := db.Delete(ctx, "b.txt"); err != nil || len(removed) != 1 || removed[0].Path != "/b.txt" {
		t.Errorf("deleting a file: %v %v", removed, err)
	}
	if n, _ := db.WorkspaceUsage(ctx); n != (Usage{Files: 8}) {
		t.Errorf("usage after deletes %+v, want 8 in files", n)
	}
}

func entries(es []Entry) []string {
	var out []string
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s %s %d %d", e.Name, e.Type, e.Size, int(e.Modified.Sub(t0)/time.Minute)))
	}
	return out
}

func TestWorkspaceQuotaRefusalKeepsOldContent(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	// No history: the quota is about the files alone here.
	for k, v := range map[string]string{SettingWorkspaceQuota: "100", SettingWorkspaceVersionsKept: "0"} {
		if err := db.SetSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.WriteFile(ctx, "/a", bytes.Repeat([]byte("a"), 60), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := db.WriteFile(ctx, "/b", bytes.Repeat([]byte("b"), 30), ""); err != nil {
		t.Fatal(err)
	}
	// Replacing a file counts only the difference.
	if _, err := db.WriteFile(ctx, "/a", bytes.Repeat([]byte("A"), 70), ""); err != nil {
		t.Fatalf("replacement within quota: %v", err)
	}
	_, err := db.WriteFile(ctx, "/a", bytes.Repeat([]byte("X"), 71), "")
	if !errors.Is(err, ErrQuotaExceeded) || !strings.Contains(err.Error(), SettingWorkspaceQuota) || !strings.Contains(err.Error(), "101 bytes") {
		t.Fatalf("over quota: %v", err)
	}
	if _, err := db.WriteFile(ctx, "/c", []byte("c"), ""); !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("new file over quota: %v", err)
	}
	f, _ := db.ReadFile(ctx, "/a")
	if string(f.Content) != strings.Repeat("A", 70) || f.Version != 2 {
		t.Fatalf("refused write changed the file: %q v%d", f.Content, f.Version)
	}
	if _, err := db.Stat(ctx, "/c"); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("refused new file exists: %v", err)
	}
	if n, _ := db.WorkspaceUsage(ctx); n != (Usage{Files: 100}) {
		t.Fatalf("usage %+v, want 100 in files", n)
	}
	// Lowering the quota below the usage still lets files shrink.
	db.SetSetting(ctx, SettingWorkspaceQuota, "10")
	if _, err := db.WriteFile(ctx, "/a", []byte("small"), ""); err != nil {
		t.Fatalf("shrinking write over a lowered quota: %v", err)
	}
	db.SetSetting(ctx, SettingWorkspaceQuota, "lots")
	if _, err := db.WriteFile(ctx, "/a", []byte("x"), ""); !errors.Is(err, ErrBadWorkspaceSetting) || !strings.Contains(err.Error(), "ferry config set "+SettingWorkspaceQuota) {
		t.Fatalf("bad quota setting: %v", err)
	}
	db.SetSetting(ctx, SettingWorkspaceQuota, "100")
	db.SetSetting(ctx, SettingWorkspacePruneWhenFull, "maybe")
	if _, err := db.WriteFile(ctx, "/a", []byte("x"), ""); !errors.Is(err, ErrBadWorkspaceSetting) || !strings.Contains(err.Error(), SettingWorkspacePruneWhenFull) {
		t.Fatalf("bad prune setting: %v", err)
	}
}

// TestWorkspaceQuotaCountsVersions is the finding: with the quota at 100,000 bytes,
// rewriting one file let megabytes pile up as kept versions while the usage read
// nothing. Now every kept byte counts, and a refusal says where the space went and
// how to free it.
func TestWorkspaceQuotaCountsVersions(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	for k, v := range map[string]string{SettingWorkspaceQuota: "100000", SettingWorkspaceVersionsKept: "100", SettingWorkspacePruneWhenFull: "false"} {
		if err := db.SetSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	chunk := func(i int) []byte { return bytes.Repeat([]byte{'a' + byte(i)}, 30000) }
	for i := range 3 {
		if _, err := db.WriteFile(ctx, "/big.txt", chunk(i), ""); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if n, _ := db.WorkspaceUsage(ctx); n != (Usage{Files: 30000, Versions: 60000}) {
		t.Fatalf("usage %+v, want 30000 in files and 60000 in versions", n)
	}
	_, err := db.WriteFile(ctx, "/big.txt", chunk(3), "")
	if !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("the fourth 30 KB write passed a 100 KB quota: %v", err)
	}
	for _, want := range []string{"120000 bytes", "30000 in files", "90000 in earlier versions", SettingWorkspaceVersionsKept, SettingWorkspacePruneWhenFull, "opfs_delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if f, _ := db.ReadFile(ctx, "/big.txt"); f.Version != 3 || f.Content[0] != 'c' {
		t.Fatalf("the refused write changed the file: v%d", f.Version)
	}
	// Deleting the file frees its history too.
	if _, err := db.Delete(ctx, "/big.txt"); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.WorkspaceUsage(ctx); n != (Usage{}) {
		t.Fatalf("usage after the delete %+v, want nothing", n)
	}
}

// TestWorkspaceQuotaPrunesOldestVersionsFirst: with workspace.prune_when_full (the
// default) a write that would pass the quota drops the oldest versions, of any file,
// just enough to fit, and says so; a write too big even then is refused whole.
func TestWorkspaceQuotaPrunesOldestVersionsFirst(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := 0
	db.Now = func() time.Time { tick++; return t0.Add(time.Duration(tick) * time.Second) }
	db.SetSetting(ctx, SettingWorkspaceQuota, "1000")
	write := func(p string, n int, c byte) FileInfo {
		t.Helper()
		info, err := db.WriteFile(ctx, p, bytes.Repeat([]byte{c}, n), "")
		if err != nil {
			t.Fatalf("writing %s: %v", p, err)
		}
		return info
	}
	write("/a", 200, '1') // a v1
	write("/b", 200, '1') // b v1
	write("/a", 200, '2') // a v1 kept: 600
	write("/b", 200, '2') // b v1 kept: 800
	if info := write("/c", 200, '1'); info.Pruned != (Pruned{}) {
		t.Fatalf("a write that fits pruned %+v", info.Pruned)
	}
	// 1000 used; 150 more needs the oldest version (a v1) dropped, and only it.
	info := write("/d", 150, '1')
	if info.Pruned != (Pruned{Versions: 1, Bytes: 200}) {
		t.Fatalf("pruned %+v, want the one oldest version", info.Pruned)
	}
	if vs, _ := db.Versions(ctx, "/a"); len(vs) != 0 {
		t.Errorf("a's oldest version survived: %+v", vs)
	}
	if vs, _ := db.Versions(ctx, "/b"); len(vs) != 1 {
		t.Errorf("b's version was dropped although a's older one covered the need: %+v", vs)
	}
	if n, _ := db.WorkspaceUsage(ctx); n != (Usage{Files: 750, Versions: 200}) {
		t.Fatalf("usage %+v", n)
	}
	// Even with every version gone, 400 more does not fit: refused, nothing dropped.
	_, err := db.WriteFile(ctx, "/e", bytes.Repeat([]byte{'x'}, 400), "")
	if !errors.Is(err, ErrQuotaExceeded) || !strings.Contains(err.Error(), "every earlier version dropped") {
		t.Fatalf("too big even after pruning: %v", err)
	}
	if vs, _ := db.Versions(ctx, "/b"); len(vs) != 1 {
		t.Errorf("a refused write still dropped versions: %+v", vs)
	}
	// A restore is a write and is held to the same quota.
	if _, err := db.Restore(ctx, "/b", 1); err != nil {
		t.Fatalf("restore within quota: %v", err)
	}
	if n, _ := db.WorkspaceUsage(ctx); n.Total() > 1000 {
		t.Fatalf("usage %+v over the quota after a restore", n)
	}
}

func TestWorkspaceVersionsAndUndo(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	for i := 1; i <= 8; i++ {
		if _, err := db.WriteFile(ctx, "/f", []byte("v"+strconv.Itoa(i)), ""); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := db.Versions(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	var nums []int64
	for _, v := range vs {
		nums = append(nums, v.Version)
	}
	if fmt.Sprint(nums) != "[7 6 5 4 3]" {
		t.Fatalf("kept versions %v, want the newest %d", nums, DefaultWorkspaceVersionsKept)
	}
	read := func() string {
		t.Helper()
		f, err := db.ReadFile(ctx, "/f")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s@%d", f.Content, f.Version)
	}
	if _, err := db.Undo(ctx, "/f"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "v7@7" {
		t.Fatalf("after undo: %s", got)
	}
	db.Undo(ctx, "/f")
	if got := read(); got != "v6@6" {
		t.Fatalf("after second undo: %s", got)
	}
	// A write after an undo continues from there.
	db.WriteFile(ctx, "/f", []byte("new"), "")
	if got := read(); got != "new@7" {
		t.Fatalf("write after undo: %s", got)
	}
	db.Undo(ctx, "/f")
	if got := read(); got != "v6@6" {
		t.Fatalf("undo of the write after undo: %s", got)
	}
	// Restore is a write: it can itself be undone.
	if _, err := db.Restore(ctx, "/f", 4); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "v4@7" {
		t.Fatalf("after restore: %s", got)
	}
	db.Undo(ctx, "/f")
	if got := read(); got != "v6@6" {
		t.Fatalf("undo of restore: %s", got)
	}
	if _, err := db.Restore(ctx, "/f", 99); !errors.Is(err, ErrNoSuchVersion) {
		t.Fatalf("restoring a missing version: %v", err)
	}
	for range 10 {
		db.Undo(ctx, "/f")
	}
	if got := read(); got != "v3@3" {
		t.Fatalf("after undoing everything: %s", got)
	}
	if _, err := db.Undo(ctx, "/f"); !errors.Is(err, ErrNoVersions) {
		t.Fatalf("undo with no history: %v", err)
	}
	if _, err := db.Undo(ctx, "/missing"); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("undo of a missing file: %v", err)
	}

	// With versions_kept at 0 nothing is kept, and the old history goes at the next write.
	db.WriteFile(ctx, "/f", []byte("a"), "")
	db.SetSetting(ctx, SettingWorkspaceVersionsKept, "0")
	db.WriteFile(ctx, "/f", []byte("b"), "")
	if vs, _ := db.Versions(ctx, "/f"); len(vs) != 0 {
		t.Fatalf("versions kept with versions_kept=0: %v", vs)
	}
	// Deleting the file deletes its history.
	db.SetSetting(ctx, SettingWorkspaceVersionsKept, "5")
	db.WriteFile(ctx, "/f", []byte("c"), "")
	db.Delete(ctx, "/f")
	var n int
	db.sql.QueryRow(`SELECT COUNT(*) FROM workspace_file_versions`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d versions left after delete", n)
	}
}

// TestWorkspaceTwoProcessesWriteAtOnce: two host processes on one data directory
// write the workspace at the same moment, each its own files and one shared file. No
// write is lost, none fails with "database is locked", and the usage the quota relies
// on matches the files.
func TestWorkspaceTwoProcessesWriteAtOnce(t *testing.T) {
	if os.Getenv("FERRY_WORKSPACE_WRITER") != "" {
		return
	}
	dir := t.TempDir()
	// Open once first so that both writers find the schema in place (migrating
	// concurrently is TestTwoProcessesWriteAtOnce's business) and share a quota
	// small enough that the shared file's churn is checked against it.
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	const each = 150
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWorkspaceWriter$")
	cmd.Env = append(os.Environ(), "FERRY_WORKSPACE_WRITER="+dir, "FERRY_WORKSPACE_WRITES="+strconv.Itoa(each))
	out := make(chan []byte, 1)
	go func() { b, _ := cmd.CombinedOutput(); out <- b }()
	parentErr := writeWorkspace(dir, "parent", each)
	childOut := <-out
	if parentErr != nil {
		t.Fatal(parentErr)
	}
	if cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("child writer failed: %s", childOut)
	}
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var sum int64
	for _, who := range []string{"parent", "child"} {
		es, err := db.List(ctx, "/"+who)
		if err != nil || len(es) != each {
			t.Fatalf("%s wrote %d files (%v), want %d: a write was lost", who, len(es), err, each)
		}
		for _, e := range es {
			sum += e.Size
		}
	}
	shared, err := db.ReadFile(ctx, "/shared.txt")
	if err != nil || shared.Version != 2*each {
		t.Fatalf("shared file at version %d (%v), want %d: a write was lost", shared.Version, err, 2*each)
	}
	sum += shared.Size
	var versions int64
	vs, _ := db.Versions(ctx, "/shared.txt")
	for _, v := range vs {
		versions += v.Size
	}
	if n, _ := db.WorkspaceUsage(ctx); n != (Usage{Files: sum, Versions: versions}) {
		t.Fatalf("usage %+v, files total %d, versions %d", n, sum, versions)
	}
}

func TestHelperWorkspaceWriter(t *testing.T) {
	dir := os.Getenv("FERRY_WORKSPACE_WRITER")
	if dir == "" {
		t.Skip("helper process for TestWorkspaceTwoProcessesWriteAtOnce")
	}
	n, _ := strconv.Atoi(os.Getenv("FERRY_WORKSPACE_WRITES"))
	if err := writeWorkspace(dir, "child", n); err != nil {
		t.Fatal(err)
	}
}

func writeWorkspace(dir, who string, n int) error {
	db, err := Open(dir)
	if err != nil {
		return fmt.Errorf("%s: open: %w", who, err)
	}
	defer db.Close()
	ctx := context.Background()
	for i := range n {
		p := fmt.Sprintf("/%s/%03d.bin", who, i)
		content := bytes.Repeat([]byte{byte(i)}, 100+i)
		if _, err := db.WriteFile(ctx, p, content, ""); err != nil {
			return fmt.Errorf("%s: write %d: %w", who, i, err)
		}
		if f, err := db.ReadFile(ctx, p); err != nil || !bytes.Equal(f.Content, content) {
			return fmt.Errorf("%s: read %d: %v", who, i, err)
		}
		if _, err := db.WriteFile(ctx, "/shared.txt", []byte(who+" "+strconv.Itoa(i)), ""); err != nil {
			return fmt.Errorf("%s: shared write %d: %w", who, i, err)
		}
	}
	return nil
}

// BenchmarkWorkspaceWriteRead is the figure: one write then one read of a
// 1 KiB file, on a real database file (secure_delete on), over a workspace that grows
// as it runs. Beside pairs a second it reports the process's CPU time per pair, which
// a busy machine disturbs far less than the wall clock, and the load average.
func BenchmarkWorkspaceWriteRead(b *testing.B) {
	db, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	content := bytes.Repeat([]byte("0123456789abcdef"), 64)
	b.SetBytes(int64(2 * len(content)))
	cpu0 := cpuTime()
	start := time.Now()
	i := 0
	for ; b.Loop(); i++ {
		p := fmt.Sprintf("/bench/%d/file-%d.txt", i%100, i)
		if _, err := db.WriteFile(ctx, p, content, ""); err != nil {
			b.Fatal(err)
		}
		if _, err := db.ReadFile(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(i)/time.Since(start).Seconds(), "pairs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(i), "cpu-µs/pair")
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("loadavg %s", strings.TrimSpace(string(load)))
	}
}

// The finding: NFC/NFD twins of an existing name were accepted as a second file, and
// names with bidi overrides or zero-width characters were kept. Twins are one file
// now, and the refusal is an invalid path to every caller.
func TestWorkspaceNameTwinsAreOneFile(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	if _, err := db.WriteFile(ctx, "/r\u00e9sum\u00e9.md", []byte("one"), ""); err != nil {
		t.Fatal(err)
	}
	info, err := db.WriteFile(ctx, "/re\u0301sume\u0301.md", []byte("two"), "")
	if err != nil || info.Version != 2 || info.Path != "/r\u00e9sum\u00e9.md" {
		t.Fatalf("the NFD twin: %+v %v, want the same file at version 2", info, err)
	}
	if es, _ := db.List(ctx, "/"); len(es) != 1 {
		t.Fatalf("two entries for one name: %+v", es)
	}
	_, err = db.WriteFile(ctx, "/report\u202Efdp.exe", []byte("x"), "")
	if !errors.Is(err, ErrPathInvisible) || KindOf(err) != Invalid || !strings.Contains(err.Error(), "U+202E") {
		t.Fatalf("bidi override: %v", err)
	}
}

// Paths an older ferry stored in NFD or with invisible characters stay reachable:
// the first open brings them to today's form, keeping both of two twins.
func TestOldWorkspacePathsNormalisedOnce(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.WriteFile(ctx, "/caf\u00e9.txt", []byte("nfc"), ""); err != nil {
		t.Fatal(err)
	}
	for p, body := range map[string]string{"/cafe\u0301.txt": "nfd", "/a\u200Bb/n\u202Ee.md": "hidden"} {
		if _, err := db.sql.ExecContext(ctx, `INSERT INTO workspace_files(path, content, size, mime, is_text, created_at, modified_at)
			VALUES (?, ?, ?, 'text/plain', 1, 'x', 'x')`, p, []byte(body), len(body)); err != nil {
			t.Fatal(err)
		}
	}
	db.sql.ExecContext(ctx, `PRAGMA user_version = 1`)
	db.Close()
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for p, want := range map[string]string{"/caf\u00e9.txt": "nfc", "/caf\u00e9 (2).txt": "nfd", "/ab/ne.md": "hidden"} {
		if f, err := db.ReadFile(ctx, p); err != nil || string(f.Content) != want {
			t.Errorf("%q: %q %v, want %q", p, f.Content, err, want)
		}
	}
}
