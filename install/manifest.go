package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ferryhq/ferry/buildinfo"
)

// ManifestFile is the file name every browser expects: <host name>.json.
const ManifestFile = buildinfo.HostName + ".json"

// AllowedIDsSetting is the setting holding the extension IDs the host accepts besides
// the pinned one, as a JSON array of strings. The manifests' allowed_origins are built
// from it, so the browser and the host agree on who may connect.
const AllowedIDsSetting = "host.allowed_extension_ids"

// Manifest is a native-messaging host manifest as Chrome-family browsers read it.
type Manifest struct {
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	Path           string   `json:"path"`
	Type           string   `json:"type"`
	AllowedOrigins []string `json:"allowed_origins"`
}

// NewManifest describes the host at exe, reachable from the pinned extension and from
// extraIDs.
func NewManifest(exe string, extraIDs []string) Manifest {
	origins := []string{Origin(buildinfo.ExtensionID)}
	for _, id := range normalizeIDs(extraIDs) {
		origins = append(origins, Origin(id))
	}
	return Manifest{
		Name:           buildinfo.HostName,
		Description:    "Ferry, an AI agent in your browser: the native host",
		Path:           exe,
		Type:           "stdio",
		AllowedOrigins: origins,
	}
}

// Encode renders m the way Install writes it, so that byte comparison tells whether a
// file on disk is already up to date.
func (m Manifest) Encode() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		panic(err) // a struct of strings always encodes
	}
	return buf.Bytes()
}

// ParseManifest decodes a manifest file's content.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Origin is the caller origin Chrome passes for an extension ID.
func Origin(id string) string { return "chrome-extension://" + id + "/" }

// ValidExtensionID reports whether id has the shape Chrome gives extension IDs:
// 32 letters from a to p (a hash written in base 16 with the digits a–p).
func ValidExtensionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range id {
		if c < 'a' || c > 'p' {
			return false
		}
	}
	return true
}

// ParseExtensionID accepts a bare ID or the origin form people copy from error
// messages (chrome-extension://ID/), and returns the bare ID.
func ParseExtensionID(s string) (string, error) {
	id := strings.TrimSpace(s)
	id = strings.TrimPrefix(id, "chrome-extension://")
	id = strings.TrimSuffix(id, "/")
	if !ValidExtensionID(id) {
		return "", fmt.Errorf("invalid extension ID %q: an ID is 32 letters a–p, as shown on chrome://extensions with Developer mode on", s)
	}
	return id, nil
}

// originID returns the ID of a well-formed extension origin.
func originID(origin string) (string, bool) {
	rest, ok := strings.CutPrefix(origin, "chrome-extension://")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/")
	if !ok || !ValidExtensionID(id) {
		return "", false
	}
	return id, true
}

// normalizeIDs sorts and deduplicates ids, dropping the pinned ID, which is always
// allowed and so never stored.
func normalizeIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != buildinfo.ExtensionID {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// decodeIDs reads the AllowedIDsSetting value.
func decodeIDs(value string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	var ids []string
	if err := json.Unmarshal([]byte(value), &ids); err != nil {
		return nil, fmt.Errorf("setting %s is not a JSON array of extension IDs: %w", AllowedIDsSetting, err)
	}
	return ids, nil
}

func encodeIDs(ids []string) string {
	ids = normalizeIDs(ids)
	if ids == nil {
		ids = []string{}
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// writeFileAtomic replaces path with data so that a browser reading it at the same
// moment sees either the old or the new manifest, never half of one. It reports
// whether anything changed.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (changed bool, err error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == perm {
			return false, nil
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("write in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	// CreateTemp makes 0600 files; browsers run as the same user, but a --system
	// manifest must be readable by every user's browser.
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return false, fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("replace %s: %w", path, err)
	}
	return true, nil
}

// readOurManifest reads path and tells whether it is a Ferry manifest, so that
// uninstall never deletes a file some other program put there.
func readOurManifest(path string) (m Manifest, exists, ours bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Manifest{}, false, false, nil
	}
	if err != nil {
		return Manifest{}, true, false, err
	}
	m, perr := ParseManifest(data)
	if perr != nil {
		return Manifest{}, true, false, nil
	}
	return m, true, m.Name == buildinfo.HostName, nil
}
