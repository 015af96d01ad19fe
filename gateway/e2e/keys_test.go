package e2e

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/host/model/modeltest"
)

// TestUserKeys: a user's further keys, each named, work beside the user's own
// token and are audited as the user's; one expires, one is removed, and the
// list says when each was last used.
func TestUserKeys(t *testing.T) {
	tm := newTeam(t, "sqlite")
	gen := tm.gw.generation(t)
	ci := strings.TrimSpace(tm.must("", "key", "add", "alice", "--name", "ci"))
	brief := strings.TrimSpace(tm.must("", "key", "add", "alice", "--name", "brief", "--expires", "3s"))
	tm.gw.waitGeneration(t, gen+2)
	if _, errs, code := tm.ferry("", "key", "add", "alice", "--name", "ci"); code == 0 || !strings.Contains(errs, "already has a key") {
		t.Fatalf("a second key of one name: %d %s", code, errs)
	}
	tm.oa.SetResponder(func(modeltest.Request) modeltest.Turn { return modeltest.Turn{Text: "ok"} })
	ask := func(tok string) (int, string) {
		resp := post(t, tm.gw.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", "hi", false, nil))
		body := readAll(t, resp)
		return resp.StatusCode, body
	}
	for _, tok := range []string{tm.tok, ci, brief} {
		if code, body := ask(tok); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	for _, r := range tm.requests(3) {
		if r.User != "alice" {
			t.Errorf("a key's request audited as %q", r.User)
		}
	}
	time.Sleep(3 * time.Second)
	if code, body := ask(brief); code != 401 || !strings.Contains(body, "expired") {
		t.Fatalf("an expired key: %d %s", code, body)
	}
	waitFor(t, "the last use in the list", func() bool {
		var keys []store.Key
		json.Unmarshal([]byte(tm.must("", "key", "list", "--user", "alice", "--json")), &keys)
		return len(keys) == 2 && !keys[0].LastUsed.IsZero() && !keys[1].LastUsed.IsZero()
	})
	tm.oa.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: strings.Repeat("long answer ", 400), ChunkDelay: 20 * time.Millisecond}
	})
	open := slowStreams(t, tm.gw, ci, 1)[0]
	gen = tm.gw.generation(t)
	tm.must("", "key", "remove", "alice", "--name", "ci")
	tm.gw.waitGeneration(t, gen+1)
	rest, _ := io.ReadAll(open)
	if !strings.Contains(string(rest), "removed") || !strings.Contains(string(rest), `"error"`) {
		t.Fatalf("a removed key's open stream went on: …%s", clipEnd(string(rest), 200))
	}
	tm.oa.SetResponder(func(modeltest.Request) modeltest.Turn { return modeltest.Turn{Text: "ok"} })
	if code, _ := ask(ci); code != 401 {
		t.Fatalf("a removed key: %d", code)
	}
	if code, _ := ask(tm.tok); code != 200 {
		t.Fatalf("the user's own token after a key's removal: %d", code)
	}
}
