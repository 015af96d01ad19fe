// Package release tests scripts/release end to end. It is a package of its own, apart
// from the browser tests, because its six cross-builds are the slowest thing the
// suite does and should neither share nor eat their time budget.
package release

// scripts/release as a maintainer runs it, and its linux/amd64 archive as a person
// without Go uses it: unpacked into a folder of its own, its `ferry install` registers
// that binary, and Chromium with the extension from the release's zip reaches it.

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/tests/browsertest"
)

const releaseVersion = "9.8.7-e2e.1"

func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ferry for six platforms; skipped with -short")
	}
	browsertest.RequireChromium(t)
	out := browsertest.TempDir(t, "ferry-release-")
	again := browsertest.TempDir(t, "ferry-release-again-")
	for _, dir := range []string{out, again} {
		cmd := exec.Command("bash", filepath.Join(browsertest.RepoRoot(), "scripts", "release"), releaseVersion, dir)
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1796000000")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/release: %v\n%s", err, b)
		}
	}

	// Six archives, two extension zips, and checksums that hold.
	want := []string{
		"SHA256SUMS",
		"ferry-extension_" + releaseVersion + ".zip",
		"ferry-extension_" + releaseVersion + "_store.zip",
		"ferry_" + releaseVersion + "_darwin_amd64.tar.gz",
		"ferry_" + releaseVersion + "_darwin_arm64.tar.gz",
		"ferry_" + releaseVersion + "_linux_amd64.tar.gz",
		"ferry_" + releaseVersion + "_linux_arm64.tar.gz",
		"ferry_" + releaseVersion + "_windows_amd64.zip",
		"ferry_" + releaseVersion + "_windows_arm64.zip",
	}
	var got []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		got = append(got, e.Name())
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("scripts/release wrote\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	n := 0
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		b, err := os.ReadFile(filepath.Join(out, name))
		h := sha256.Sum256(b)
		if !ok || err != nil || hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS line %q does not hold (%v)", sc.Text(), err)
		}
		n++
	}
	if n != len(want)-1 {
		t.Errorf("SHA256SUMS covers %d files, want %d", n, len(want)-1)
	}
	// Reproducible: a second run gives the same bytes.
	if b, _ := os.ReadFile(filepath.Join(again, "SHA256SUMS")); string(b) != string(sums) {
		t.Errorf("two releases of the same commit differ:\n%s\n---\n%s", sums, b)
	}
	// The Windows archive carries ferry.exe.
	if names := zipNames(t, filepath.Join(out, "ferry_"+releaseVersion+"_windows_arm64.zip")); !slices.Contains(names, "ferry_"+releaseVersion+"_windows_arm64/ferry.exe") {
		t.Errorf("windows archive: %v", names)
	}
	// The store's zip has no key; the unpacked one keeps it, so its ID is the pinned one.
	storeManifest := zipFile(t, filepath.Join(out, "ferry-extension_"+releaseVersion+"_store.zip"), "manifest.json")
	if strings.Contains(storeManifest, `"key"`) || !strings.Contains(storeManifest, `"version_name": "`+releaseVersion+`"`) {
		t.Errorf("store manifest:\n%s", storeManifest)
	}

	// A person without Go: unpack, install, start the browser with the zipped extension.
	dir := browsertest.TempDir(t, "ferry-unpacked-")
	untar(t, filepath.Join(out, "ferry_"+releaseVersion+"_linux_amd64.tar.gz"), dir)
	top := filepath.Join(dir, "ferry_"+releaseVersion+"_linux_amd64")
	for _, f := range []string{"ferry", "README.md", "LICENSE", "PRIVACY.md"} {
		if _, err := os.Stat(filepath.Join(top, f)); err != nil {
			t.Errorf("the archive lacks %s", f)
		}
	}
	bin := filepath.Join(top, "ferry")
	if v, err := exec.Command(bin, "version").Output(); err != nil || strings.TrimSpace(string(v)) != "ferry "+releaseVersion+" (protocol 1)" {
		t.Fatalf("ferry version from the archive: %q %v", v, err)
	}
	home := browsertest.TempDir(t, "ferry-release-home-")
	profile := browsertest.TempDir(t, "ferry-release-profile-")
	run := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ferry %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	run("install", "--browser", "chromium", "--user-data-dir", profile)
	manifestPath := filepath.Join(profile, "NativeMessagingHosts", buildinfo.HostName+".json")
	var hostManifest struct {
		Path string `json:"path"`
	}
	if b, err := os.ReadFile(manifestPath); err != nil || json.Unmarshal(b, &hostManifest) != nil || hostManifest.Path != bin {
		t.Fatalf("the installed manifest does not name the unpacked binary %s: %s", bin, hostManifest.Path)
	}
	ext := filepath.Join(browsertest.TempDir(t, "ferry-release-ext-"), "ferry")
	unzip(t, filepath.Join(out, "ferry-extension_"+releaseVersion+".zip"), ext)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := browsertest.Launch(ctx, browsertest.Options{UserDataDir: profile, ExtensionDir: ext, Env: []string{"FERRY_HOME=" + home}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.ExtensionID != buildinfo.ExtensionID {
		t.Errorf("the released extension loads as %s, want the pinned %s", b.ExtensionID, buildinfo.ExtensionID)
	}
	sw, cancelSW, err := b.ServiceWorker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cancelSW()
	info, err := browsertest.Eval[map[string]any](sw, `ferryHost.request('host.info').then(i => ({...i, manifest: chrome.runtime.getManifest().version_name}))`)
	if err != nil {
		t.Fatalf("the released extension could not reach the released host: %v", err)
	}
	if info["version"] != releaseVersion || info["manifest"] != releaseVersion || info["data_dir"] != home {
		t.Errorf("host.info through the released extension: %v", info)
	}
	b.Close()

	run("uninstall", "--browser", "chromium", "--user-data-dir", profile)
	if _, err := os.Stat(manifestPath); !os.IsNotExist(err) {
		t.Errorf("ferry uninstall left %s (%v)", manifestPath, err)
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, b, os.FileMode(h.Mode)); err != nil {
			t.Fatal(err)
		}
	}
}

func unzip(t *testing.T, archive, dir string) {
	t.Helper()
	zr, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func zipNames(t *testing.T, archive string) []string {
	t.Helper()
	zr, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	return names
}

func zipFile(t *testing.T, archive, name string) string {
	t.Helper()
	zr, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name == name {
			r, _ := f.Open()
			b, _ := io.ReadAll(r)
			r.Close()
			return string(b)
		}
	}
	t.Fatalf("%s has no %s", archive, name)
	return ""
}
