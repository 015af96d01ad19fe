package e2e

// ferry.ask in Chromium: a page of an origin the user allowed (settings.set) starts
// an agent run bound to its tab, answered by a fake model; a denied origin is
// refused; an origin whose page API is turned off has its declarations ignored and
// ferry.ready() rejects with the reason.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/browsertest"
)

func TestPageAsk(t *testing.T) {
	s := start(t, 120*time.Second)
	srv := fixtureServer(t)
	origin := srv.URL
	url := srv.URL + "/pageactions/todo.html"

	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn { return modeltest.Text("Noted.") })
	if out, err := ferryIn(t, s.home, "", "provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"); err != nil {
		t.Fatalf("ferry provider add: %v\n%s", err, out)
	}
	set := func(key string, value any) {
		t.Helper()
		var out map[string]any
		s.must("settings.set", map[string]any{"key": key, "value": value}, &out)
	}
	set("pages.ask_allowed_origins", origin)

	page, tab := s.openTab(url)
	inPage := func(expr string) string {
		t.Helper()
		v, err := browsertest.Eval[string](page, expr)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	askJS := func(text string) string {
		return fmt.Sprintf(`ferry.ready().then(() => ferry.ask(%q)).then(r => 'OK ' + r.conversation_id + ' ' + r.run_id, e => 'ERR ' + e.message)`, text)
	}

	t.Run("allowed origin starts a run bound to its tab", func(t *testing.T) {
		got := inPage(askJS("Summarise my todo list"))
		f := strings.Fields(got)
		if len(f) != 3 || f[0] != "OK" {
			t.Fatalf("ferry.ask: %s", got)
		}
		conv, run := f[1], f[2]
		if r := s.waitRun(t, run, 30*time.Second); r.Status != "completed" {
			t.Fatalf("run ended %+v", r)
		}
		var c struct {
			Conversation struct {
				TabID  int    `json:"tab_id"`
				Origin string `json:"origin"`
			} `json:"conversation"`
		}
		s.must("conversations.get", map[string]any{"conversation_id": conv}, &c)
		if c.Conversation.TabID != tab || c.Conversation.Origin != origin {
			t.Fatalf("conversation bound to %+v, want tab %d %s", c.Conversation, tab, origin)
		}
		reqs := fake.Requests()
		if len(reqs) == 0 {
			t.Fatal("the model was never asked")
		}
		var user string
		for _, m := range reqs[0].Messages {
			if m.Role == "user" {
				user += m.Text
			}
		}
		if !strings.Contains(user, "Summarise my todo list") {
			t.Errorf("the model did not get the page's text: %q", user)
		}
	})

	t.Run("denied origin is refused", func(t *testing.T) {
		set("pages.ask_allowed_origins", nil)
		set("pages.ask_denied_origins", origin)
		defer set("pages.ask_denied_origins", nil)
		if got := inPage(askJS("again")); !strings.HasPrefix(got, "ERR ") || !strings.Contains(got, "does not allow") {
			t.Fatalf("ferry.ask of a denied origin: %s", got)
		}
	})

	t.Run("disabled origin: declarations ignored, ready rejects", func(t *testing.T) {
		set("pages.disabled_origins", origin)
		if err := chromedp.Do(page, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		got := inPage(`ferry.ready(5000).then(() => 'ready', e => 'ERR ' + e.message)`)
		if !strings.Contains(got, "turned off for "+origin) {
			t.Fatalf("ferry.ready() on a disabled origin: %s", got)
		}
		time.Sleep(500 * time.Millisecond) // the page's declarations had their chance
		var l toolsList
		s.must("tools.list", map[string]any{"tab_id": tab}, &l)
		for _, tool := range l.Tools {
			if tool.Source == "page" {
				t.Errorf("a disabled origin's action is offered: %s", tool.Name)
			}
		}
		var o struct {
			Origins []struct {
				Origin   string `json:"origin"`
				Disabled bool   `json:"disabled"`
				Actions  int    `json:"actions"`
			} `json:"origins"`
		}
		s.must("page.origins", map[string]any{}, &o)
		found := false
		for _, x := range o.Origins {
			if x.Origin == origin {
				found = x.Disabled && x.Actions == 0
			}
		}
		if !found {
			t.Errorf("page.origins: %+v", o.Origins)
		}
	})
}
