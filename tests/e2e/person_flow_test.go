package e2e

// A person's whole way through Ferry after `ferry install`, in the UI only: a
// provider added in the options page (its key typed in the form, made the
// default), add_task set to ask first in the Confirmations section, the demo todo
// page open in a tab, the side panel bound to it, a message sent, the confirmation
// approved, and the row, the tool card and the streamed answer checked. The host
// is only read (settings.list, providers.list) to assert on what the UI stored.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/browsertest"
)

func TestPersonCompletesTheDemo(t *testing.T) {
	const (
		providerKey = "sk-person-flow-3Hq8Zt"
		todo        = "准备明天的议程"
		finalAnswer = "Added 准备明天的议程 to your todos."
	)
	s := start(t, 60*time.Second) // ferry install --browser chromium --user-data-dir D, then Chromium
	srv := examplesServer(t)
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetKey(providerKey) // 401 unless the key typed in the form reached the host
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
		for _, m := range req.Messages {
			if len(m.ToolResults) > 0 {
				return modeltest.Text(finalAnswer)
			}
		}
		return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_add", Name: "add_task", Arguments: `{"text":"` + todo + `"}`}}}
	})

	// 1. The options page: a provider through the form, made the default; add_task
	// asks first.
	opts := s.page("options/options.html", 1000, 1400)
	s.waitIn(opts, "options connected", `document.querySelector('#host-status')?.dataset.state === 'connected' &&
		!document.querySelector('[data-field="tools.confirm"]').hidden`)
	if err := chromedp.Do(opts, chromedp.SetValue("#pf-kind", "openai")); err != nil {
		t.Fatal(err)
	}
	s.typeInto(opts, "#pf-id", "fake")
	s.typeInto(opts, "#pf-base-url", fake.URL)
	s.typeInto(opts, "#pf-model", "fake-model")
	s.typeInto(opts, "#pf-key", providerKey)
	s.click(opts, "#pf-default")
	s.click(opts, "#provider-form button[type=submit]")
	s.waitIn(opts, "provider listed", `[...document.querySelectorAll('#provider-rows tr')].some(tr => tr.textContent.includes('fake-model'))`)
	if v, _ := browsertest.Eval[string](opts, `document.querySelector('#pf-key').value`); v != "" {
		t.Errorf("the key field still holds %q after saving", v)
	}
	var providers struct {
		Default   string `json:"default"`
		Providers []struct {
			ID      string `json:"id"`
			Kind    string `json:"kind"`
			BaseURL string `json:"base_url"`
			KeySet  bool   `json:"key_set"`
			Default bool   `json:"default"`
		} `json:"providers"`
	}
	s.must("providers.list", map[string]any{}, &providers)
	if len(providers.Providers) != 1 || providers.Providers[0].ID != "fake" || !providers.Providers[0].KeySet || providers.Providers[0].BaseURL != fake.URL {
		t.Fatalf("providers after the form: %+v", providers)
	}
	if p := providers.Providers[0]; !p.Default && providers.Default != "fake" {
		raw := s.request("providers.list", map[string]any{})
		t.Fatalf("the provider is not the default: %s", raw.Result)
	}

	s.typeInto(opts, "#s-confirm-tools", "add_task")
	s.click(opts, "#prefs-confirm button[type=submit]")
	s.waitIn(opts, "confirmations saved", `document.querySelector('#prefs-confirm .prefs-status').textContent !== '' &&
		document.querySelector('#s-confirm-tools-error').textContent === ''`)
	if got := setting(t, s, "tools.confirm"); got != "add_task" {
		t.Fatalf("tools.confirm = %q after the form, want add_task", got)
	}

	// 2. The demo page in a tab, then the side panel of its window. A person opens
	// the panel with the toolbar button; here the same call the button makes,
	// chrome.sidePanel.open, runs in the extension's options page with a user
	// gesture, and the real side panel (not a tab) opens, bound to the window's
	// active tab: the demo.
	demoURL := srv.URL + "/todo/"
	demo, cancelDemo := chromedp.NewContext(s.browser.Ctx)
	defer cancelDemo()
	if err := chromedp.Do(demo, chromedp.EmulateViewport(800, 700), chromedp.Navigate(demoURL)); err != nil {
		t.Fatal(err)
	}
	s.waitIn(demo, "demo rendered", `document.querySelectorAll('#list li').length === 3`)
	gesture := func(p *runtime.EvaluateParams) { yes := true; p.UserGesture = &yes }
	opened, err := chromedp.Run(opts, chromedp.Evaluate[string](`chrome.tabs.query({url: `+jsString(demoURL)+`}).then(([tab]) =>
		chrome.sidePanel.open({windowId: tab.windowId}).then(() => 'opened', e => 'refused: ' + e.message))`, chromedp.EvalAwaitPromise, gesture))
	if err != nil || opened != "opened" {
		t.Fatalf("open the side panel: %q %v", opened, err)
	}
	panel := sidePanelTarget(t, s)
	s.waitIn(panel, "panel connected", `document.querySelector('#host-status')?.dataset.state === 'connected' && !document.querySelector('#send').disabled`)
	s.waitIn(panel, "panel bound to the demo tab", `document.querySelector('#bound-origin').textContent === `+jsString(srv.URL)+` &&
		document.querySelector('#bound-tab-title').textContent === 'Ferry todo demo'`)
	s.waitIn(panel, "the page's actions at a glance", `/\d/.test(document.querySelector('#page-actions').textContent) &&
		document.querySelector('#page-actions').title.split('\n').includes('add_task')`)

	// 3. The message, typed and sent.
	s.typeInto(panel, "#input", "add "+todo+" to my todos")
	s.click(panel, "#send")
	s.waitIn(panel, "user message shown", `document.querySelector('.msg.user')?.textContent === `+jsString("add "+todo+" to my todos"))

	// 4. The confirmation card: the action, its argument, the page's origin; Allow.
	s.waitIn(panel, "confirmation card", `document.querySelector('.prompt.confirm') !== null`)
	card, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`)
	for _, want := range []string{"add_task", todo, srv.URL} {
		if !strings.Contains(card, want) {
			t.Errorf("the confirmation card lacks %q: %q", want, card)
		}
	}
	if n, _ := browsertest.Eval[int](demo, `document.querySelectorAll('#list li').length`); n != 3 {
		t.Errorf("the page has %d rows before the approval, want 3", n)
	}
	allow, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm button:not(.quiet)').textContent.trim()`)
	if allow != "Allow" {
		t.Errorf("the approving button reads %q, want Allow", allow)
	}
	s.click(panel, `.prompt.confirm button:not(.quiet)`)

	// 5. The row in the page, the tool card with the expectation met, the answer.
	s.waitIn(demo, "the row in the demo page", `document.querySelector('#list li')?.textContent.trim() === `+jsString(todo)+` &&
		document.querySelectorAll('#list li').length === 4`)
	s.waitIn(panel, "answer streamed, run over", `document.querySelector('#stop').hidden &&
		[...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes(`+jsString(finalAnswer)+`) && !e.classList.contains('streaming'))`)
	if _, err := browsertest.Eval[bool](panel, `([...document.querySelectorAll('.tool-card details')].forEach(d => d.open = true), true)`); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"one tool card, add_task": `document.querySelectorAll('.tool-card').length === 1 && document.querySelector('.tool-card .tool-name')?.textContent === 'add_task'`,
		"tool card succeeded":     `document.querySelector('.tool-card').classList.contains('ok') && document.querySelector('.tool-card .error') === null`,
		"expectation shown, met":  `(c => c.includes('The new task appears in the list') && /"met":\s*true/.test(c))(document.querySelector('.tool-card').textContent)`,
		"change evidence shown":   `document.querySelector('.tool-card').textContent.includes('t4')`,
		"no prompt left":          `document.querySelector('.prompt') === null`,
		"no error shown":          `document.querySelector('#composer-error').textContent === ''`,
	}
	for name, cond := range checks {
		if ok, err := browsertest.Eval[bool](panel, cond); err != nil || !ok {
			dump, _ := browsertest.Eval[string](panel, `document.querySelector('#messages').innerText`)
			t.Errorf("%s: %v (err %v)\n%s", name, ok, err, dump)
		}
	}
	// The picture: cards closed again, as a person leaves them, the answer in view.
	if _, err := browsertest.Eval[bool](panel, `([...document.querySelectorAll('.tool-card details')].forEach(d => d.open = false),
		document.querySelector('.msg.assistant:last-of-type')?.scrollIntoView({block: 'end'}), true)`); err != nil {
		t.Fatal(err)
	}
	screenshot(t, panel, "person-flow-sidepanel-en.png")

	// What the model saw: add_task offered, its result a success with the
	// expectation met; the final answer asked for as a stream, with the typed key.
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was asked %d times, want 2", len(reqs))
	}
	if _, ok := sentTool(reqs[0], "add_task"); !ok {
		t.Errorf("add_task was not among the tools sent")
	}
	r := resultOf(t, reqs[1:], "call_add")
	if !r.Success || !strings.Contains(string(r.Expect), `"met":true`) {
		t.Errorf("add_task as the model got it: %+v expect %s", r, r.Expect)
	}
	for i, req := range reqs {
		if !req.Stream {
			t.Errorf("model request %d was not streamed", i+1)
		}
		if auth := req.Header.Get("Authorization"); !strings.Contains(auth, providerKey) {
			t.Errorf("model request %d carried Authorization %q, want the typed key", i+1, auth)
		}
	}
}

// setting reads one setting's value from the host, as the options page shows it.
func setting(t *testing.T, s *session, key string) string {
	t.Helper()
	var list struct {
		Settings []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"settings"`
	}
	s.must("settings.list", map[string]any{}, &list)
	for _, st := range list.Settings {
		if st.Key == key {
			return st.Value
		}
	}
	b, _ := json.Marshal(list)
	t.Fatalf("no setting %s in %s", key, b)
	return ""
}

// sidePanelTarget waits for the extension's side panel to appear among the
// browser's targets and attaches to it.
func sidePanelTarget(t *testing.T, s *session) context.Context {
	t.Helper()
	url := "chrome-extension://" + buildinfo.ExtensionID + "/sidepanel/sidepanel.html"
	for {
		infos, err := chromedp.Targets(s.browser.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range infos {
			if ti.URL == url {
				panel, cancel := chromedp.NewContext(s.browser.Ctx, chromedp.WithTargetID(ti.TargetID))
				t.Cleanup(cancel)
				if err := chromedp.Do(panel); err != nil {
					t.Fatalf("attach to the side panel: %v", err)
				}
				return panel
			}
		}
		select {
		case <-s.ctx.Done():
			t.Fatalf("the side panel never appeared: %v", s.ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
