// Command release builds Ferry's release files: the ferry binary for every supported
// platform with the version stamped, an archive of each with the README, licence and
// privacy notes, the extension as zips (one to load unpacked, one for the Chrome Web
// Store) and SHA-256 checksums of them all. `scripts/release VERSION` runs it.
//
// The output is reproducible: the same commit and version give byte-identical files
// on any machine, because the builds are trimmed of paths and build ids, and every
// archive entry carries the commit's time, fixed owners and modes, in sorted order.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Targets are the platforms a release covers.
var Targets = []Target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// Target is one platform.
type Target struct{ GOOS, GOARCH string }

func (t Target) String() string { return t.GOOS + "_" + t.GOARCH }

func (t Target) exe() string {
	if t.GOOS == "windows" {
		return "ferry.exe"
	}
	return "ferry"
}

// archiveName is the file a target's archive is written to: zip on Windows, where
// every user can open one, gzipped tar elsewhere, where it keeps the executable bit.
func archiveName(version string, t Target) string {
	if t.GOOS == "windows" {
		return fmt.Sprintf("ferry_%s_%s.zip", version, t)
	}
	return fmt.Sprintf("ferry_%s_%s.tar.gz", version, t)
}

// versionRE is what a release version may be: semantic versioning without a leading
// v, so that it can stand in file names and in `ferry version`.
var versionRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// manifestVersion is the extension manifest's version for a release version: Chrome
// takes only dotted integers, so a pre-release's suffix goes to version_name.
func manifestVersion(version string) (v, name string) {
	core, pre, _ := strings.Cut(version, "-")
	if pre == "" {
		return core, ""
	}
	return core, version
}

const usage = `usage: scripts/release VERSION [OUTDIR]

Builds ferry for linux, darwin and windows on amd64 and arm64 with VERSION stamped
(what ` + "`ferry version`" + ` prints), packs each with README.md, LICENSE and PRIVACY.md, packs
the extension as a zip to load unpacked (pinned ID) and one for the Chrome Web Store
(no key), and writes SHA256SUMS. OUTDIR defaults to dist/VERSION.

VERSION is semantic versioning without a leading v (1.2.0, 1.3.0-rc.1). Entries are
dated SOURCE_DATE_EPOCH, else the time of the last commit, so a build is reproducible.
`

func main() {
	flag.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	flag.Parse()
	if flag.NArg() < 1 || flag.NArg() > 2 {
		flag.Usage()
		os.Exit(2)
	}
	version := strings.TrimPrefix(flag.Arg(0), "v")
	root, err := os.Getwd()
	if err != nil {
		fail(err)
	}
	out := filepath.Join(root, "dist", version)
	if flag.NArg() == 2 {
		out = flag.Arg(1)
	}
	when, err := sourceDate(root)
	if err != nil {
		fail(err)
	}
	files, err := Release(Config{Root: root, Out: out, Version: version, Time: when, Log: os.Stdout})
	if err != nil {
		fail(err)
	}
	fmt.Printf("%d files in %s\n", len(files), out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "release:", err)
	os.Exit(1)
}

// sourceDate is the time every archive entry carries.
func sourceDate(root string) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", s)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	cmd := exec.Command("git", "log", "-1", "--format=%ct")
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot date the release from git (%v); set SOURCE_DATE_EPOCH", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("git log printed %q, not a time", b)
	}
	return time.Unix(n, 0).UTC(), nil
}

// Config is one release.
type Config struct {
	Root, Out string // the source tree and the folder the files go to
	Version   string
	Time      time.Time // every entry's modification time
	Targets   []Target  // nil: all of Targets
	Log       io.Writer // progress; nil: none
}

// Release builds and packs; it returns the files written, checksums last.
func Release(c Config) ([]string, error) {
	if !versionRE.MatchString(c.Version) {
		return nil, fmt.Errorf("version %q is not semantic versioning like 1.2.0 or 1.3.0-rc.1", c.Version)
	}
	if c.Targets == nil {
		c.Targets = Targets
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return nil, err
	}
	docs, err := readDocs(c.Root)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "ferry-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	var written []string
	for i, t := range c.Targets {
		fmt.Fprintf(c.Log, "[%d/%d] building ferry %s for %s\n", i+1, len(c.Targets), c.Version, t)
		bin := filepath.Join(work, t.String(), t.exe())
		if err := build(c.Root, bin, c.Version, t); err != nil {
			return nil, err
		}
		exe, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		dir := strings.TrimSuffix(strings.TrimSuffix(archiveName(c.Version, t), ".zip"), ".tar.gz")
		entries := append([]entry{{name: dir + "/" + t.exe(), data: exe, exec: true}}, docsIn(dir, docs)...)
		name := filepath.Join(c.Out, archiveName(c.Version, t))
		if t.GOOS == "windows" {
			err = writeZip(name, entries, c.Time)
		} else {
			err = writeTarGz(name, entries, c.Time)
		}
		if err != nil {
			return nil, err
		}
		written = append(written, name)
	}

	fmt.Fprintln(c.Log, "packing the extension")
	unpacked, store, err := extensionEntries(filepath.Join(c.Root, "extension"), c.Version)
	if err != nil {
		return nil, err
	}
	for _, z := range []struct {
		name    string
		entries []entry
	}{
		{fmt.Sprintf("ferry-extension_%s.zip", c.Version), unpacked},
		{fmt.Sprintf("ferry-extension_%s_store.zip", c.Version), store},
	} {
		name := filepath.Join(c.Out, z.name)
		if err := writeZip(name, z.entries, c.Time); err != nil {
			return nil, err
		}
		written = append(written, name)
	}

	sums := filepath.Join(c.Out, "SHA256SUMS")
	if err := writeChecksums(sums, written); err != nil {
		return nil, err
	}
	for _, f := range append(written, sums) {
		fmt.Fprintf(c.Log, "  %s\n", filepath.Base(f))
	}
	return append(written, sums), nil
}

// build compiles cmd/ferry for t. -trimpath and an empty build id keep local paths
// and per-machine ids out of the binary; cgo is off because every dependency is pure
// Go, so no C toolchain of the target is needed.
func build(root, out, version string, t Target) error {
	ldflags := "-s -w -buildid= -X github.com/ferryhq/ferry/buildinfo.Version=" + version
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/ferry")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", t, err, b)
	}
	return nil
}

type entry struct {
	name string
	data []byte
	exec bool
}

// docs go into every archive beside the binary.
var docFiles = []struct{ from, to string }{
	{"README.md", "README.md"},
	{"LICENSE", "LICENSE"},
	{"extension/PRIVACY.md", "PRIVACY.md"},
}

func readDocs(root string) ([]entry, error) {
	var out []entry
	for _, d := range docFiles {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(d.from)))
		if err != nil {
			return nil, fmt.Errorf("a release needs %s: %w", d.from, err)
		}
		out = append(out, entry{name: d.to, data: b})
	}
	return out, nil
}

func docsIn(dir string, docs []entry) []entry {
	out := make([]entry, len(docs))
	for i, d := range docs {
		out[i] = entry{name: dir + "/" + d.name, data: d.data}
	}
	return out
}

// Not part of the extension as it ships: its tests, their fakes, and the package.json
// that only tells Node the files are modules.
var notShipped = map[string]bool{"test": true, "testing": true, "node_modules": true, "package.json": true}

// extensionEntries reads the extension folder twice over: with the manifest's key,
// which pins the ID that `ferry install` allows, for loading unpacked; and without
// it, as the Chrome Web Store requires (the store gives its own ID). Both carry the
// release's version.
func extensionEntries(dir, version string) (unpacked, store []entry, err error) {
	var files []entry
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if notShipped[strings.SplitN(rel, "/", 2)[0]] {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, entry{name: rel, data: b})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, keep := range []bool{true, false} {
		var out []entry
		for _, f := range files {
			if f.name == "manifest.json" {
				m, err := stampManifest(f.data, version, keep)
				if err != nil {
					return nil, nil, err
				}
				f = entry{name: f.name, data: m}
			}
			out = append(out, f)
		}
		if keep {
			unpacked = out
		} else {
			store = out
		}
	}
	return unpacked, store, nil
}

// stampManifest sets the manifest's version (and version_name for a pre-release)
// and drops the key for the store, keeping every other member and its order.
func stampManifest(b []byte, version string, keepKey bool) ([]byte, error) {
	var m orderedObject
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("extension/manifest.json: %w", err)
	}
	v, name := manifestVersion(version)
	m.set("version", v)
	if name != "" {
		m.set("version_name", name)
	}
	if !keepKey {
		m.remove("key")
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// orderedObject is a JSON object that keeps its members' order, so a stamped manifest
// reads like the source one.
type orderedObject struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	o.vals = map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if _, dup := o.vals[k]; !dup {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	return nil
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *orderedObject) set(k, v string) {
	vb, _ := json.Marshal(v)
	if _, ok := o.vals[k]; !ok {
		// version_name reads best right after version.
		at := len(o.keys)
		for i, key := range o.keys {
			if key == "version" {
				at = i + 1
			}
		}
		o.keys = append(o.keys[:at], append([]string{k}, o.keys[at:]...)...)
	}
	o.vals[k] = vb
}

func (o *orderedObject) remove(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func sorted(entries []entry) []entry {
	out := append([]entry(nil), entries...)
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func mode(e entry) int64 {
	if e.exec {
		return 0o755
	}
	return 0o644
}

func writeTarGz(name string, entries []entry, when time.Time) error {
	var buf bytes.Buffer
	// No name or time in the gzip header: they would differ between builds.
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	for _, e := range sorted(entries) {
		if dir := path.Dir(e.name); dir != "." && !dirs[dir] {
			dirs[dir] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: when, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: mode(e), Size: int64(len(e.data)), ModTime: when, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(name, buf.Bytes(), 0o644)
}

func writeZip(name string, entries []entry, when time.Time) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	for _, e := range sorted(entries) {
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: when}
		hdr.SetMode(fs.FileMode(mode(e)))
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := w.Write(e.data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(name, buf.Bytes(), 0o644)
}

// writeChecksums writes the lines `sha256sum -c` checks.
func writeChecksums(name string, files []string) error {
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), filepath.Base(f))
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}
