package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestManifestStamped(t *testing.T) {
	src := []byte(`{"manifest_version": 3, "name": "__MSG_extName__", "version": "0.1.0", "key": "MIIB", "permissions": ["tabs"]}`)
	for _, tc := range []struct {
		version   string
		keep      bool
		want      string
		wantName  string
		wantOrder string
	}{
		{"1.2.0", true, "1.2.0", "", "manifest_version,name,version,key,permissions"},
		{"1.2.0", false, "1.2.0", "", "manifest_version,name,version,permissions"},
		{"1.3.0-rc.1", false, "1.3.0", "1.3.0-rc.1", "manifest_version,name,version,version_name,permissions"},
	} {
		b, err := stampManifest(src, tc.version, tc.keep)
		if err != nil {
			t.Fatal(err)
		}
		var m orderedObject
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		json.Unmarshal(b, &got)
		if got["version"] != tc.want || (tc.wantName != "" && got["version_name"] != tc.wantName) {
			t.Errorf("%s: version %v, version_name %v", tc.version, got["version"], got["version_name"])
		}
		if _, has := got["key"]; has != tc.keep {
			t.Errorf("%s keep=%v: key present %v (the store refuses a key; unpacked needs it for the pinned ID)", tc.version, tc.keep, has)
		}
		if order := strings.Join(m.keys, ","); order != tc.wantOrder {
			t.Errorf("members in order %s, want %s", order, tc.wantOrder)
		}
	}
}

func TestVersionsRefused(t *testing.T) {
	for _, v := range []string{"", "1.2", "v1.2.0", "1.2.0 ", "01.2.0", "1.2.0/../x", "latest"} {
		if _, err := Release(Config{Root: t.TempDir(), Out: t.TempDir(), Version: v, Targets: []Target{}}); err == nil {
			t.Errorf("version %q accepted", v)
		}
	}
}

// The archives are byte-identical from one pack to the next: same entries in any
// order, same time, same bytes.
func TestArchivesReproducible(t *testing.T) {
	when := time.Date(2026, 11, 30, 4, 10, 7, 0, time.UTC)
	a := []entry{{name: "d/ferry", data: []byte("\x7fELF..."), exec: true}, {name: "d/README.md", data: []byte("# Ferry\n")}}
	b := []entry{a[1], a[0]}
	dir := t.TempDir()
	for _, w := range []struct {
		ext   string
		write func(string, []entry, time.Time) error
	}{{".tar.gz", writeTarGz}, {".zip", writeZip}} {
		p1, p2 := filepath.Join(dir, "1"+w.ext), filepath.Join(dir, "2"+w.ext)
		if err := w.write(p1, a, when); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // a clock that leaked in would now differ
		if err := w.write(p2, b, when); err != nil {
			t.Fatal(err)
		}
		x, _ := os.ReadFile(p1)
		y, _ := os.ReadFile(p2)
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two packs of the same entries", w.ext)
		}
	}
	zr, err := zip.OpenReader(filepath.Join(dir, "1.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if !f.Modified.Equal(when) {
			t.Errorf("%s dated %v, want %v", f.Name, f.Modified, when)
		}
		if f.Name == "d/ferry" && f.Mode().Perm() != 0o755 {
			t.Errorf("the binary's mode is %v, want 0755", f.Mode())
		}
	}
}

// The extension as it ships: no tests, fakes or package.json, the manifest stamped.
func TestExtensionEntries(t *testing.T) {
	root := filepath.Join("..", "extension")
	unpacked, store, err := extensionEntries(root, "2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range store {
		names[e.name] = true
		first := strings.SplitN(e.name, "/", 2)[0]
		if notShipped[first] {
			t.Errorf("%s is in the store package", e.name)
		}
		if e.name == "manifest.json" && (bytes.Contains(e.data, []byte(`"key"`)) || !bytes.Contains(e.data, []byte(`"version": "2.0.0"`))) {
			t.Errorf("store manifest:\n%s", e.data)
		}
	}
	for _, want := range []string{"manifest.json", "background/service-worker.js", "_locales/en/messages.json", "icons/icon128.png"} {
		if !names[want] {
			t.Errorf("%s missing from the extension package", want)
		}
	}
	for _, e := range unpacked {
		if e.name == "manifest.json" && !bytes.Contains(e.data, []byte(`"key"`)) {
			t.Errorf("the unpacked package lost the key that pins the extension's ID")
		}
	}
}
