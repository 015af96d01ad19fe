package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/storage"
)

// Each finding of the hardening issue, reproduced against the real binary on a real
// database file (the control socket's are in preauth_test.go, the file modes' in
// ownership_test.go, a password typed in a page in tests/e2e).

// ferryCall runs `ferry call NAME ARGS` and decodes the result it prints.
func ferryCall(t *testing.T, home, name string, args any) (map[string]any, string) {
	t.Helper()
	b, _ := json.Marshal(args)
	out, stderr, _ := runFerry(t, home, "", "call", name, string(b))
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ferry call %s printed %q (stderr %s)", name, out, stderr)
	}
	return res, out
}

func mustSet(t *testing.T, home string, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		if _, stderr, code := runFerry(t, home, "", "config", "set", kv[i], kv[i+1]); code != 0 {
			t.Fatalf("config set %s: %s", kv[i], stderr)
		}
	}
}

func randomMarker(what string) string {
	b := make([]byte, 10)
	rand.Read(b)
	return what + "-" + hex.EncodeToString(b)
}

// dbFilesHold says which of the database's files contain s.
func dbFilesHold(t *testing.T, home, s string) []string {
	t.Helper()
	var found []string
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if b, err := os.ReadFile(filepath.Join(home, storage.DatabaseFile+suffix)); err == nil && bytes.Contains(b, []byte(s)) {
			found = append(found, storage.DatabaseFile+suffix)
		}
	}
	return found
}

// The finding: with the quota at 100,000 bytes, megabytes piled up as old versions
// while the usage read 0.
func TestQuotaCountsVersionsRealBinary(t *testing.T) {
	home := t.TempDir()
	mustSet(t, home, "workspace.quota_bytes", "100000", "workspace.versions_kept", "100", "workspace.prune_when_full", "false")
	body := func(i int) string { return strings.Repeat(strconv.Itoa(i), 30000) }
	for i := range 3 {
		if res, out := ferryCall(t, home, "opfs_write", map[string]any{"path": "/log.txt", "content": body(i)}); res["success"] != true {
			t.Fatalf("write %d: %s", i, out)
		}
	}
	res, out := ferryCall(t, home, "opfs_write", map[string]any{"path": "/log.txt", "content": body(3)})
	if res["success"] != false || res["code"] != "ACTION_UNAVAILABLE" || !strings.Contains(out, "90000 in earlier versions") || !strings.Contains(out, "workspace.prune_when_full") {
		t.Fatalf("the fourth 30 KB write under a 100 KB quota: %s", out)
	}
	// With pruning (the default), the write goes through by dropping the oldest.
	mustSet(t, home, "workspace.prune_when_full", "true")
	res, out = ferryCall(t, home, "opfs_write", map[string]any{"path": "/log.txt", "content": body(3)})
	if res["success"] != true || !strings.Contains(out, `"pruned_versions":1`) {
		t.Fatalf("a write with pruning on: %s", out)
	}
	db, err := storage.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if u, _ := db.WorkspaceUsage(context.Background()); u.Total() > 100000 || u.Versions == 0 {
		t.Fatalf("usage %+v", u)
	}
}

// The finding: opfs_read returned a 50 MiB single-line file in one result, and
// binary files had no cap.
func TestReadIsBoundedRealBinary(t *testing.T) {
	home := t.TempDir()
	mustSet(t, home, "workspace.quota_bytes", strconv.Itoa(200<<20))
	db, err := storage.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.WriteFile(ctx, "/bundle.min.js", bytes.Repeat([]byte("x"), 50<<20), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := db.WriteFile(ctx, "/blob.bin", bytes.Repeat([]byte{0, 0xff}, 4<<20), ""); err != nil {
		t.Fatal(err)
	}
	db.Close()
	res, out := ferryCall(t, home, "opfs_read", map[string]any{"path": "/bundle.min.js"})
	r, _ := res["result"].(map[string]any)
	if len(out) > 200<<10 || r["next_column"] != 50001.0 || !strings.Contains(r["note"].(string), "column 50001") {
		t.Fatalf("one read of a 50 MiB line printed %d bytes: %.300s", len(out), out)
	}
	res, out = ferryCall(t, home, "opfs_read", map[string]any{"path": "/blob.bin"})
	r, _ = res["result"].(map[string]any)
	if len(out) > 200<<10 || r["bytes"] != float64(48<<10) || r["next_offset"] != float64(48<<10) {
		t.Fatalf("one read of an 8 MiB binary printed %d bytes: %.300s", len(out), out)
	}
}

// The finding: deleted workspace files and deleted secrets stayed readable in the
// database's free pages (`strings ferry.db`), and the audit log kept the full text of
// opfs_write for 30 days.
func TestDeletedSecretsAndFilesLeaveNoTraceRealBinary(t *testing.T) {
	home := t.TempDir()
	secret := randomMarker("sk-live")
	if _, stderr, code := runFerry(t, home, secret+"\n", "secret", "set", "search.bing.key"); code != 0 {
		t.Fatal(stderr)
	}
	small, big := randomMarker("diary"), randomMarker("contract")
	for path, content := range map[string]string{"/private/diary.txt": "dear diary, " + small, "/private/contract.txt": strings.Repeat(big+" ", 4000)} {
		if res, out := ferryCall(t, home, "opfs_write", map[string]any{"path": path, "content": content}); res["success"] != true {
			t.Fatal(out)
		}
	}
	if got := dbFilesHold(t, home, secret); len(got) == 0 {
		t.Fatal("the secret is in no file before its deletion: the test could not fail")
	}
	if _, stderr, code := runFerry(t, home, "", "secret", "delete", "search.bing.key"); code != 0 {
		t.Fatal(stderr)
	}
	if res, out := ferryCall(t, home, "opfs_delete", map[string]any{"path": "/private"}); res["success"] != true {
		t.Fatal(out)
	}
	for _, m := range []string{secret, small, big} {
		if got := dbFilesHold(t, home, m); len(got) != 0 {
			t.Errorf("%s… is still in %v after its deletion", m[:12], got)
		}
	}
	logs, _ := os.ReadFile(storage.LogPath(home))
	if bytes.Contains(logs, []byte(secret)) || bytes.Contains(logs, []byte(small)) {
		t.Errorf("the log file holds a deleted secret or file")
	}
}

// The finding: a provider base URL with user:pass@ was accepted, and printed in full
// by `provider list` and in errors.
func TestProviderURLCredentialsRealBinary(t *testing.T) {
	home := t.TempDir()
	cred := randomMarker("sk-in-url")
	out, stderr, code := runFerry(t, home, "", "provider", "add", "vendor", "--kind", "openai",
		"--base-url", "https://me:"+cred+"@api.vendor.test/v1", "--model", "m")
	if code == 0 || !strings.Contains(stderr, "holds credentials") || !strings.Contains(stderr, "--base-url https://api.vendor.test/v1 --api-key-stdin") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if strings.Contains(out+stderr, cred) {
		t.Fatalf("the refusal prints the credential: %s", stderr)
	}
	if list, _, _ := runFerry(t, home, "", "provider", "list"); strings.Contains(list, "vendor") {
		t.Fatalf("the refused provider was saved: %s", list)
	}
	// One stored before the check (an older ferry) is never shown whole.
	db, err := storage.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.SaveProvider(context.Background(), storage.ProviderConfig{ID: "legacy", Kind: "openai",
		BaseURL: "https://me:" + cred + "@127.0.0.1:9/v1", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, args := range [][]string{{"provider", "list"}, {"provider", "list", "--json"}, {"provider", "test", "legacy"}, {"run", "--local", "--provider", "legacy", "hi"}} {
		out, stderr, _ := runFerry(t, home, "", args...)
		if strings.Contains(out+stderr, cred) {
			t.Errorf("`ferry %s` prints the credential: %s %s", strings.Join(args, " "), out, stderr)
		}
		if args[1] == "list" && !strings.Contains(out, "***@127.0.0.1:9") {
			t.Errorf("`ferry %s` does not show the redacted URL: %s", strings.Join(args, " "), out)
		}
	}
	logs, _ := os.ReadFile(storage.LogPath(home))
	if bytes.Contains(logs, []byte(cred)) {
		t.Errorf("the log file holds the credential")
	}
}

// The finding: workspace names with bidi overrides and zero-width characters, and
// NFC/NFD twins of an existing name, were accepted.
func TestWorkspaceNamesRealBinary(t *testing.T) {
	home := t.TempDir()
	for _, name := range []string{"/invoice\u202Efdp.exe", "/pass\u200Bwords.txt", "/\uFEFFnotes.md"} {
		res, out := ferryCall(t, home, "opfs_write", map[string]any{"path": name, "content": "x"})
		if res["code"] != "INVALID_PARAMS" || !strings.Contains(out, "invisible or direction-changing") {
			t.Errorf("%q: %s", name, out)
		}
	}
	if res, out := ferryCall(t, home, "opfs_write", map[string]any{"path": "/caf\u00e9.md", "content": "one"}); res["success"] != true {
		t.Fatal(out)
	}
	res, out := ferryCall(t, home, "opfs_write", map[string]any{"path": "/cafe\u0301.md", "content": "two"})
	if r, _ := res["result"].(map[string]any); r["version"] != 2.0 || r["created"] == true {
		t.Fatalf("the NFD twin made a second file: %s", out)
	}
	res, out = ferryCall(t, home, "opfs_list", map[string]any{})
	if r, _ := res["result"].(map[string]any); len(r["entries"].([]any)) != 1 {
		t.Fatalf("listing: %s", out)
	}
}

// The finding: fetch.allow_private_hosts could not name a port. (The redirect rule
// needs a public host to start from, which loopback cannot serve without changing
// the machine's network; host/web's TestRedirectToAllowedPrivateOnlyFromPrivate
// holds it.)
func TestAllowPrivateHostPortRealBinary(t *testing.T) {
	home := t.TempDir()
	dev := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "dev server") }))
	defer dev.Close()
	hit := false
	db := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = true }))
	defer db.Close()
	_, port, _ := net.SplitHostPort(dev.Listener.Addr().String())
	mustSet(t, home, "fetch.allow_private_hosts", "127.0.0.1:"+port+", [::1]:"+port)
	if res, out := ferryCall(t, home, "web_fetch", map[string]any{"url": dev.URL}); res["success"] != true || !strings.Contains(out, "dev server") {
		t.Fatalf("the allowed port: %s", out)
	}
	res, out := ferryCall(t, home, "web_fetch", map[string]any{"url": db.URL})
	if res["code"] != "PERMISSION_DENIED" || hit {
		t.Fatalf("another port of the same host: %s (reached: %v)", out, hit)
	}
	if _, stderr, code := runFerry(t, home, "", "config", "set", "fetch.allow_private_hosts", "localhost:http"); code == 0 || !strings.Contains(stderr, "not a number from 1 to 65535") {
		t.Errorf("a bad port accepted: %s", stderr)
	}
}

// Secrets never reach the logs: a search API key that travels in a request's query
// (Google's key=) was repeated by a transport error into the tool result, the audit
// log and the log file.
func TestSecretsNeverInLogsRealBinary(t *testing.T) {
	home := t.TempDir()
	key := randomMarker("AIzaSy")
	if _, stderr, code := runFerry(t, home, key+"\n", "secret", "set", "search.google.key"); code != 0 {
		t.Fatal(stderr)
	}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	endpoint := "http://" + closed.Addr().String() + "/customsearch/v1"
	closed.Close() // nothing listens there: the request fails in transport
	mustSet(t, home, "search.engine", "google", "search.google.cx", "cx-1", "search.google.endpoint", endpoint,
		"fetch.allow_private_hosts", "127.0.0.1")
	res, out := ferryCall(t, home, "web_search", map[string]any{"query": "ferry"})
	if res["success"] != false || !strings.Contains(out, "could not be reached") {
		t.Fatalf("search against a closed port: %s", out)
	}
	if strings.Contains(out, key) {
		t.Fatalf("the failure shows the key: %s", out)
	}
	logs, _ := os.ReadFile(storage.LogPath(home))
	if bytes.Contains(logs, []byte(key)) {
		t.Errorf("the log file holds the key")
	}
	db, err := storage.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, _ := db.QueryAudit(context.Background(), storage.AuditFilter{Tool: "web_search"})
	for _, r := range rows {
		if strings.Contains(r.Result+string(r.Arguments), key) {
			t.Errorf("the audit row holds the key: %s", r.Result)
		}
	}
	if len(rows) == 0 {
		t.Errorf("no audit row for the search")
	}
}
